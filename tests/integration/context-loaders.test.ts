/**
 * Context loaders (`[[context]]`) over real jailed satellites: each approved
 * loader is asked when a session activates its extension; one that throws or
 * passes its time limit makes the extension inactive as a bundle (its
 * dependent too, naming it) while an unrelated one keeps working; the
 * session's composed context names where each text came from; a reload asks
 * the loaders of what it (re)activates, and only those.
 * Fixtures: tests/integration/fixtures/session-kinds (notes, broken, needs-broken, slow).
 */
import { join } from "node:path";
import type { Broker } from "../../broker/broker.js";
import { renderStatus } from "../../broker/cli/session.js";
import type { Session, ExtensionStatus } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { contentText, openHookSession, type HookSession } from "../support/hook-session.js";

const FIXTURES = join(REPO, "tests/integration/fixtures/session-kinds");

let opened: HookSession;
let broker: Broker;
let session: Session;

/** The ledger's invocations of `kind` for `extension` in this session, as names. */
function invoked(extension: string, kind: string): string[] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select name from invocations where session_id = ? and extension = ? and kind = ? order by id")
    .all(session.id, extension, kind) as { name: string }[];
  return rows.map((r) => r.name);
}

const byName = (rows: ExtensionStatus[]): Record<string, ExtensionStatus> =>
  Object.fromEntries(rows.map((r) => [r.name, r]));

beforeAll(async () => {
  opened = await openHookSession("tether-context-", FIXTURES, ["notes", "broken", "needs-broken", "slow"], "context-1");
  ({ broker, session } = opened);
});

afterAll(async () => {
  await opened?.close();
});

test("a loader that throws makes its extension inactive as a bundle, and its dependent inactive naming it", () => {
  const status = byName(session.status());
  expect(status["broken"]?.state).toBe("inactive");
  expect(status["broken"]?.reason).toMatch(/^context loader 'flaky' failed: crashed: .*the notes file is missing/);
  expect(status["needs-broken"]?.state).toBe("inactive");
  expect(status["needs-broken"]?.reason).toMatch(
    /^needs 'broken' \(needs-broken → broken\), which is inactive: context loader 'flaky' failed/,
  );
  // The failed bundle keeps no satellite running.
  expect(broker.scope(session.id).live.has("broken")).toBe(false);
});

test("a loader past its time limit makes its extension inactive with the limit named", () => {
  const slow = byName(session.status())["slow"];
  expect(slow?.state).toBe("inactive");
  expect(slow?.reason).toMatch(/^context loader 'late' failed: timeout: .*300 ms/);
});

test("the failed bundles' tools answer inactive with the reason; the unrelated extension stays active and callable", async () => {
  const broken = await session.callTool("broken_tool", "{}");
  expect(broken.outcome).toMatchObject({ ok: false, error: { code: "inactive" } });
  expect(!broken.outcome.ok && broken.outcome.error.msg).toMatch(
    /belongs to 'broken', which is inactive in this session: context loader 'flaky' failed/,
  );
  expect((await session.callTool("dependent", "{}")).outcome).toMatchObject({ ok: false, error: { code: "inactive" } });
  expect(contentText((await session.callTool("hello", "{}")).outcome)).toBe("hello");
  expect(session.tools().map((t) => t.name)).toEqual(["hello"]);
});

test("the composed context: each loader's text in manifest order, attributed to its extension and loader", () => {
  expect(session.context()).toEqual([
    { extension: "notes", source: "context:notes", text: `notes for context-1 in ${opened.tmp}` },
    { extension: "notes", source: "context:loads", text: "loaded 1 time(s)" },
  ]);
  expect(invoked("notes", "context")).toEqual(["notes", "loads"]);
  const notes = byName(session.status())["notes"]!;
  expect(notes.contexts).toEqual(["notes", "loads"]);
  expect(renderStatus([notes])).toBe("active   notes  tools: hello; context: notes, loads");
});

test("a reload asks the loaders of what it (re)activates, and only those", async () => {
  session.prefer("notes", false);
  const out = await session.reload();
  expect(out.deactivated).toEqual(["notes"]);
  expect(session.context()).toEqual([]);
  session.prefer("notes", null);
  const back = await session.reload();
  expect(back.activated).toEqual(["notes"]);
  // The failed ones were tried again (still wanted) and failed the same way.
  expect(back.failed.map((f) => f.name).sort()).toEqual(["broken", "slow"]);
  expect(session.context().map((p) => p.text)).toEqual([`notes for context-1 in ${opened.tmp}`, "loaded 2 time(s)"]);
  expect(invoked("notes", "context")).toEqual(["notes", "loads", "notes", "loads"]);
  // A reload that changes nothing asks nothing again.
  await session.reload();
  expect(invoked("notes", "context")).toHaveLength(4);
});
