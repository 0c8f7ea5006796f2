/**
 * Managed preparation (`[managed]`) over real jailed satellites: a preparation
 * that throws, times out or turns on a tool it does not declare rejects its
 * bundle and is followed by `close` with `prepare_failed`; an extension that
 * prepared but is dropped when its requirement fails is closed with
 * `activation_failed`; a good preparation's instructions and context join the
 * composed context, its warnings show in status, and only the tools it turned
 * on answer; `close` runs on reload-out and on session close; `skv` keeps each
 * session's notes apart, under the extension's one kv quota.
 * Each fixture's close appends its reason to kv `closes/<session>`.
 * Fixtures: tests/integration/fixtures/session-kinds (planner, failprep, undeclared, slowprep, tagalong, notes).
 */
import { join } from "node:path";
import type { Broker } from "../../broker/broker.js";
import { renderStatus } from "../../broker/cli/session.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { Session, type ExtensionStatus } from "../../broker/sessions/session.js";
import { kvRepository } from "../../broker/store/kv-repository.js";
import { REPO } from "../support/satellites.js";
import { contentText, openHookSession, type HookSession } from "../support/hook-session.js";

const FIXTURES = join(REPO, "tests/integration/fixtures/session-kinds");
const FAILING = ["failprep", "undeclared", "slowprep", "tagalong"];

let opened: HookSession;
let broker: Broker;
let session: Session;

/** The reasons `extension`'s close was asked with in session `id`, as its close recorded them. */
function closes(extension: string, id: string): string[] {
  const row = kvRepository(broker.store).get({ extension, session: null }, `closes/${id}`);
  return row === null ? [] : (JSON.parse(row.value.toString("utf8")) as string[]);
}

/** The ledger's invocations of `kind` for `extension` in session `id`, as their outcomes. */
function invoked(extension: string, kind: string, id = session.id): string[] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select outcome from invocations where session_id = ? and extension = ? and kind = ? order by id")
    .all(id, extension, kind) as { outcome: string }[];
  return rows.map((r) => r.outcome);
}

const byName = (rows: ExtensionStatus[]): Record<string, ExtensionStatus> =>
  Object.fromEntries(rows.map((r) => [r.name, r]));
const json = (outcome: { ok: boolean; value?: unknown }): unknown => JSON.parse(contentText(outcome));

beforeAll(async () => {
  opened = await openHookSession("tether-managed-", FIXTURES, ["planner", "notes", ...FAILING], "prep-a");
  ({ broker, session } = opened);
});

afterAll(async () => {
  await opened?.close();
});

describe("failed preparations", () => {
  test("one that throws: inactive with the reason, then closed with prepare_failed", () => {
    const status = byName(session.status());
    expect(status["failprep"]?.reason).toMatch(/^preparation failed: crashed: .*no plan file/);
    expect(closes("failprep", "prep-a")).toEqual(["prepare_failed"]);
    expect(invoked("failprep", "close")).toEqual(["ok"]);
    expect(broker.scope(session.id).live.has("failprep")).toBe(false);
  });

  test("one that turns on a tool it does not declare: failed with the name, nothing of it on", async () => {
    expect(byName(session.status())["undeclared"]?.reason).toBe(
      "preparation failed: it turned on tool 'ghost', which its manifest does not declare (it declares [undeclared_tool]) (still wanted: the next reload retries it)",
    );
    expect(closes("undeclared", "prep-a")).toEqual(["prepare_failed"]);
    expect((await session.callTool("undeclared_tool", "{}")).outcome).toMatchObject({
      ok: false,
      error: { code: "inactive" },
    });
  });

  test("one past its time limit: failed as a timeout; close still runs, in a fresh satellite", () => {
    expect(byName(session.status())["slowprep"]?.reason).toMatch(/^preparation failed: timeout: .*300 ms/);
    // The broker cut it off at its limit (as it does a hook): the ledger row and the reason both say timeout.
    expect(invoked("slowprep", "prepare")).toEqual(["timeout"]);
    expect(invoked("slowprep", "close")).toEqual(["ok"]);
    expect(closes("slowprep", "prep-a")).toEqual(["prepare_failed"]);
  });

  test("one that prepared but whose requirement failed: dropped, closed with activation_failed", () => {
    expect(byName(session.status())["tagalong"]?.reason).toMatch(
      /^needs 'failprep' \(tagalong → failprep\), which is inactive: preparation failed/,
    );
    expect(invoked("tagalong", "prepare")).toEqual(["ok"]);
    expect(closes("tagalong", "prep-a")).toEqual(["activation_failed"]);
  });
});

describe("a good preparation", () => {
  test("the unrelated managed extension is active; its status shows what it contributes and its warning", () => {
    const planner = byName(session.status())["planner"]!;
    expect(planner).toMatchObject({
      state: "active",
      managed: true,
      observes: true,
      contexts: ["brief"],
      toolsOff: ["draft"],
      commandsOff: ["replan"],
      warnings: ["the plan file is stale"],
    });
    expect(renderStatus([planner])).toBe(
      "active   planner  tools: plan, remember, recall, fill (off here: draft); commands: none (off here: /replan); context: brief; managed; observes\n    warning: the plan file is stale",
    );
  });

  test("the composed context: in registry order, each piece attributed — loaders first, then the preparation", () => {
    expect(session.context()).toEqual([
      { extension: "planner", source: "context:brief", text: "planner's brief" },
      { extension: "planner", source: "prepare", text: "Plan before you act." },
      { extension: "planner", source: "prepare", text: "resumed: false" },
      { extension: "notes", source: "context:notes", text: `notes for prep-a in ${opened.tmp}` },
      { extension: "notes", source: "context:loads", text: "loaded 1 time(s)" },
    ]);
  });

  test("only the tools and commands it turned on answer; one left off says so", async () => {
    expect(contentText((await session.callTool("plan", "{}")).outcome)).toBe("the plan");
    expect(
      session
        .tools()
        .filter((t) => t.extension === "planner")
        .map((t) => t.name),
    ).toEqual(["plan", "remember", "recall", "fill"]);
    expect((await session.callTool("draft", "{}")).outcome).toEqual({
      ok: false,
      error: {
        code: "inactive",
        msg: "The tool 'draft' of 'planner' is off in this session: its preparation turned on only [plan, remember, recall, fill]",
      },
    });
    expect(session.commands()).toEqual([]);
    expect((await session.runCommand("/replan")).outcome).toMatchObject({
      ok: false,
      error: { code: "inactive", msg: expect.stringContaining("/replan' of 'planner' is off in this session") },
    });
  });
});

describe("session-scoped storage and close", () => {
  let other: Session;

  beforeAll(async () => {
    // The failing fixtures stay out of the second session: it is about planner.
    const prefs = new Preferences(broker.store);
    for (const name of FAILING) prefs.setSession("prep-b", name, false);
    other = await Session.open(broker, { id: "prep-b", workspace: opened.tmp });
  });

  test("skv keeps each session's notes apart", async () => {
    expect(contentText((await session.callTool("remember", '{"note":"in a"}')).outcome)).toBe("stored");
    expect(contentText((await other.callTool("remember", '{"note":"in b"}')).outcome)).toBe("stored");
    expect(json((await session.callTool("recall", "{}")).outcome)).toBe("in a");
    expect(json((await other.callTool("recall", "{}")).outcome)).toBe("in b");
    expect(kvRepository(broker.store).list({ extension: "planner", session: "prep-a" }, "", 10)).toEqual(["note"]);
  });

  test("both sessions' keys count against the extension's one kv quota (4096 bytes)", async () => {
    expect(json((await session.callTool("fill", '{"bytes":3000}')).outcome)).toEqual({ ok: true });
    const refused = json((await other.callTool("fill", '{"bytes":3000}')).outcome) as {
      ok: boolean;
      code: string;
      message: string;
    };
    expect(refused).toMatchObject({ ok: false, code: "denied" });
    expect(refused.message).toMatch(
      /skv\.put: storage quota of 4096 bytes would be exceeded \(\d+ bytes\) \(rule: limits\.kv_bytes\)/,
    );
    broker.ledger.flush();
    const audit = broker.store.sqlite
      .prepare(
        "select capability, decision, rule from cap_audit where session_id = 'prep-b' and capability = 'skv.put' order by id",
      )
      .all();
    expect(audit).toEqual([
      { capability: "skv.put", decision: "allowed", rule: "builtin:skv" },
      { capability: "skv.put", decision: "denied", rule: "limits.kv_bytes" },
    ]);
  });

  test("a reload that turns it off closes it with reloaded_out; turned on again, it is prepared as resumed", async () => {
    other.prefer("planner", false);
    const out = await other.reload();
    expect(out.deactivated).toEqual(["planner"]);
    expect(out.notes).toEqual([]);
    expect(closes("planner", "prep-b")).toEqual(["reloaded_out"]);
    other.prefer("planner", null);
    expect((await other.reload()).activated).toEqual(["planner"]);
    expect(other.context().find((p) => p.source === "prepare" && p.text.startsWith("resumed"))?.text).toBe(
      "resumed: true",
    );
    // Its notes in this session outlived the reload.
    expect(json((await other.callTool("recall", "{}")).outcome)).toBe("in b");
  });

  test("closing the session closes it with session_closed before its satellite stops", async () => {
    expect(await other.close()).toEqual([]);
    expect(closes("planner", "prep-b")).toEqual(["reloaded_out", "session_closed"]);
    expect(invoked("planner", "close", "prep-b")).toEqual(["ok", "ok"]);
    expect(broker.scope("prep-b").live.size).toBe(0);
  });
});
