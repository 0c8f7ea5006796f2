/**
 * The served-vs-declared check (`tether check`'s boot stage, `tether install`'s
 * dry boot, every boot's handshake): one problem per difference, worded for
 * the author — which side has it, and the two ways to fix it.
 */
import { checkServed, servedProblems, ServedMismatch } from "../../broker/satellite/handshake.js";

const declared = { tools: ["list_notes", "add_note"], hooks: ["tool_call"], commands: ["notes"], entry: "index.ts" };

test("each tool, hook and command on one side only is a problem saying what to change", () => {
  expect(servedProblems(declared, { tools: ["add_note", "foo"], hooks: ["context"], commands: [] })).toEqual([
    "declared in manifest.toml but not exported from index.ts: tool list_notes (export it in `tools`, or remove its [[tool]] row)",
    'exported from index.ts but not declared in manifest.toml: tool foo (add a [[tool]] row with name = "foo", or remove it from `tools`)',
    'declared in manifest.toml but not exported from index.ts: hook tool_call (add it to the exported `hooks` (tool_call: hook("tool_call", …)), or remove its [[hook]] row)',
    'exported from index.ts but not declared in manifest.toml: hook context (add a [[hook]] row with event = "context", or remove it from `hooks`)',
    "declared in manifest.toml but not exported from index.ts: command notes (export it in `commands`, or remove its [[command]] row)",
  ]);
});

test("the same sets in another order are no problem, and the handshake passes", () => {
  const served = { tools: ["add_note", "list_notes"], hooks: ["tool_call"], commands: ["notes"] };
  expect(servedProblems(declared, served)).toEqual([]);
  expect(() => checkServed("notes", declared, served)).not.toThrow();
});

test("the handshake throws ServedMismatch (served_mismatch) carrying the problems, and says who fixes it", () => {
  let thrown: unknown;
  try {
    checkServed("notes", declared, { tools: ["add_note"], hooks: ["tool_call"], commands: ["notes"] });
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ServedMismatch);
  const err = thrown as ServedMismatch;
  expect(err.code).toBe("served_mismatch");
  expect(err.problems).toEqual([
    "declared in manifest.toml but not exported from index.ts: tool list_notes (export it in `tools`, or remove its [[tool]] row)",
  ]);
  expect(err.message).toContain("Its author must fix the extension (tether check <folder> lists what to change)");
  expect(err.message).not.toMatch(/reinstall/i);
});

test("a name served twice fails the handshake though neither side lacks it", () => {
  expect(() =>
    checkServed("notes", declared, {
      tools: ["add_note", "list_notes", "add_note"],
      hooks: ["tool_call"],
      commands: ["notes"],
    }),
  ).toThrow(ServedMismatch);
});

describe("the session-facing kinds", () => {
  const session = {
    tools: [],
    hooks: [],
    commands: [],
    contexts: ["notes"],
    routes: ["status"],
    compactions: ["fold"],
    handles: ["prepare", "observe"] as const,
    entry: "index.ts",
  };
  const servedAll = {
    tools: [],
    hooks: [],
    commands: [],
    contexts: ["notes"],
    routes: ["status"],
    compactions: ["fold"],
    handles: ["close", "observe", "prepare"] as Array<"prepare" | "close" | "observe">,
  };

  test("loaders, routes, strategies and handlers on one side only are each a problem with its fix", () => {
    expect(
      servedProblems(session, {
        tools: [],
        hooks: [],
        commands: [],
        contexts: ["other"],
        routes: [],
        compactions: ["fold"],
        handles: ["close"],
      }),
    ).toEqual([
      "declared in manifest.toml but not exported from index.ts: context notes (export it in `contexts`, or remove its [[context]] row)",
      'exported from index.ts but not declared in manifest.toml: context other (add a [[context]] row with name = "other", or remove it from `contexts`)',
      "declared in manifest.toml but not exported from index.ts: route status (export it in `routes`, or remove its [[route]] row)",
      "declared in manifest.toml but not exported from index.ts: handler observe (export `observe`, or remove the [observe] table)",
      "declared in manifest.toml but not exported from index.ts: handler prepare (export `managed = { prepare, close }`, or remove the [managed] table)",
    ]);
  });

  test("`close` may be left out of `managed`; exporting `managed` or `observe` with no table is a problem", () => {
    expect(servedProblems(session, { ...servedAll, handles: ["observe", "prepare"] })).toEqual([]);
    expect(
      servedProblems(
        { tools: [], hooks: [] },
        { tools: [], hooks: [], commands: [], handles: ["prepare", "close", "observe"] },
      ),
    ).toEqual([
      "exported from index.ts but not declared in manifest.toml: handler observe (add an [observe] table with the events it is told about, or stop exporting `observe`)".replace(
        "index.ts",
        "the entry module",
      ),
      "exported from index.ts but not declared in manifest.toml: handler prepare (add a [managed] table, or stop exporting `managed`)".replace(
        "index.ts",
        "the entry module",
      ),
    ]);
  });

  test("a mismatch in these kinds alone fails the handshake with just those problems", () => {
    expect(() => checkServed("notes", session, servedAll)).not.toThrow();
    expect(() => checkServed("notes", session, { ...servedAll, routes: [] })).toThrow(
      "Extension 'notes' is broken: declared in manifest.toml but not exported from index.ts: route status (export it in `routes`, or remove its [[route]] row). Its author must fix the extension",
    );
  });
});

describe("the initializer", () => {
  test("[init] without an exported `init`, and the reverse, are each a problem worded as `init`", () => {
    expect(
      servedProblems(
        { tools: [], hooks: [], handles: ["init"], entry: "index.ts" },
        { tools: [], hooks: [], commands: [], handles: [] },
      ),
    ).toEqual(["declared in manifest.toml but not exported from index.ts: init (export `init`, or remove [init])"]);
    expect(
      servedProblems(
        { tools: [], hooks: [], entry: "index.ts" },
        { tools: [], hooks: [], commands: [], handles: ["init"] },
      ),
    ).toEqual([
      "exported from index.ts but not declared in manifest.toml: init (add an [init] table, or stop exporting `init`)",
    ]);
    expect(
      servedProblems(
        { tools: [], hooks: [], handles: ["init"] },
        { tools: [], hooks: [], commands: [], handles: ["init"] },
      ),
    ).toEqual([]);
  });

  test("a missing `init` alone fails the handshake with just that problem", () => {
    expect(() =>
      checkServed(
        "notes",
        { tools: [], hooks: [], handles: ["init"], entry: "index.ts" },
        { tools: [], hooks: [], commands: [], handles: [] },
      ),
    ).toThrow(
      "Extension 'notes' is broken: declared in manifest.toml but not exported from index.ts: init (export `init`, or remove [init]). Its author must fix the extension",
    );
  });
});
