/**
 * `[[hook]] match` in the manifest: tool globs for tool_call/tool_result,
 * capabilities (and for net ones, hosts) for cap_call, bounded, refused for
 * every other event with a message naming it; the published schema agrees.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import { parse as parseToml } from "smol-toml";
import type { TetherError } from "../../broker/base/errors.js";
import { MAX_PATTERNS } from "../../broker/install/hook-row.js";
import { parseManifest } from "../../broker/install/manifest.js";
import { EVENT_NAMES } from "../../jail-runtime/wire/events.js";

const FILE = "ext/guard/manifest.toml";
const HEAD = 'name = "guard"\nversion = "1.0.0"\ndescription = "d"\nentry = "mod.ts"\n';
const SCHEMA = JSON.parse(
  readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../manifests/schema.json"), "utf8"),
) as object;
const validate = new Ajv({ allErrors: true, strict: true }).compile(SCHEMA);

const row = (event: string, match: readonly string[]) =>
  `${HEAD}[[hook]]\nevent = "${event}"\nmatch = ${JSON.stringify(match)}\n`;

function refusal(text: string): string {
  try {
    parseManifest(text, FILE);
  } catch (err) {
    expect((err as TetherError).code).toBe("install_failed");
    return (err as TetherError).message;
  }
  throw new Error("Expected the manifest to be refused");
}

/** Whether the published schema accepts the manifest too (it must agree with parseManifest). */
const schemaAccepts = (text: string): boolean => validate(parseToml(text)) as boolean;

describe("accepted", () => {
  test.each([
    ["tool_call", ["echo", "fs_*", "f?_read", "*"]],
    ["tool_result", ["Mixed.Case-name_1"]],
    [
      "cap_call",
      [
        "kv.put",
        "kv.*",
        "net.fetch",
        "net.fetch api.example.com",
        "net.fetch *.example.com",
        "net.* 10.0.0.?",
        "net.fetch fd00::1",
      ],
    ],
  ])("%s with %p", (event, match) => {
    const text = row(event, match);
    expect(parseManifest(text, FILE).hook).toEqual([{ event, match }]);
    expect(schemaAccepts(text)).toBe(true);
  });

  test("no match: the row is as before (every subject)", () => {
    expect(parseManifest(`${HEAD}[[hook]]\nevent = "tool_call"\n`, FILE).hook).toEqual([{ event: "tool_call" }]);
  });

  test(`${MAX_PATTERNS} patterns are allowed`, () => {
    expect(
      parseManifest(
        row(
          "tool_call",
          Array.from({ length: MAX_PATTERNS }, (_, i) => `t${i}`),
        ),
        FILE,
      ).hook[0],
    ).toMatchObject({ event: "tool_call" });
  });
});

describe("refused, saying what to change", () => {
  test.each(EVENT_NAMES.filter((e) => !["tool_call", "tool_result", "cap_call"].includes(e)))(
    "a match on a '%s' hook names the event",
    (event) => {
      const text = row(event, ["echo"]);
      expect(refusal(text)).toBe(
        `${FILE}: hook.0.match: a '${event}' hook has no subject to match; match is for tool_call, tool_result and cap_call hooks: remove it`,
      );
      expect(schemaAccepts(text)).toBe(false);
    },
  );

  test("an empty list (it would match nothing)", () => {
    expect(refusal(row("tool_call", []))).toBe(
      `${FILE}: hook.0.match: an empty list matches no tools: leave match out to hook every one`,
    );
    expect(refusal(row("cap_call", []))).toBe(
      `${FILE}: hook.0.match: an empty list matches no capability calls: leave match out to hook every one`,
    );
    expect(schemaAccepts(row("tool_call", []))).toBe(false);
  });

  test(`more than ${MAX_PATTERNS} patterns`, () => {
    const text = row(
      "tool_call",
      Array.from({ length: MAX_PATTERNS + 1 }, (_, i) => `t${i}`),
    );
    expect(refusal(text)).toBe(
      `${FILE}: hook.0.match: at most ${MAX_PATTERNS} patterns: cover several tools with one glob (fs_*, kv.*)`,
    );
    expect(schemaAccepts(text)).toBe(false);
  });

  test.each([
    ["a host on a tool event", "net.fetch api.example.com"],
    ["a space", "fs read"],
    ["an empty pattern", ""],
    ["a regex", "fs_.*|echo"],
    ["a pattern over 64 characters", "t".repeat(65)],
  ])("tool_call: %s", (_what, pattern) => {
    const text = row("tool_call", [pattern]);
    expect(refusal(text)).toBe(
      `${FILE}: hook.0.match.0: expected a tool name or glob: letters, digits, _ . - with * (any run) and ? (one character), at most 64 characters; hosts go in cap_call hooks only`,
    );
    expect(schemaAccepts(text)).toBe(false);
  });

  test.each([
    ["a host on a capability that is not net", "kv.put api.example.com"],
    ["a host on every capability", "* api.example.com"],
    ["upper case (hosts are matched in their normal form)", "net.fetch API.example.com"],
    ["two hosts", "net.fetch a.example b.example"],
    ["a URL instead of a host", "net.fetch https://api.example.com"],
    ["a host over 253 characters", `net.fetch ${"h".repeat(254)}`],
    ["a capability over 64 characters", "k".repeat(65)],
  ])("cap_call: %s", (_what, pattern) => {
    const text = row("cap_call", ["kv.get", pattern]);
    expect(refusal(text)).toBe(
      `${FILE}: hook.0.match.1: expected a capability or glob (kv.put, kv.*), or net.<name>, one space and a host or host glob (net.fetch *.example.com): lower case a-z 0-9 _ . - : with * and ?, at most 64 + 253 characters`,
    );
    expect(schemaAccepts(text)).toBe(false);
  });

  test("an unknown key on a row without match keeps valibot's words", () => {
    expect(refusal(`${HEAD}[[hook]]\nevent = "usage"\nmatcher = ["x"]\n`)).toBe(
      `${FILE}: hook.0.matcher: Invalid key: Expected never but received "matcher"`,
    );
    expect(refusal(`${HEAD}[[hook]]\nevent = "tool_call"\nmatcher = ["x"]\n`)).toBe(
      `${FILE}: hook.0.matcher: Invalid key: Expected never but received "matcher"`,
    );
  });

  test("an unknown event still lists every event, in their order", () => {
    expect(refusal(`${HEAD}[[hook]]\nevent = "on_start"\n`)).toBe(
      `${FILE}: hook.0.event: Invalid type: Expected (${EVENT_NAMES.map((e) => `"${e}"`).join(" | ")}) but received "on_start"`,
    );
  });
});
