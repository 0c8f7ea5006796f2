/**
 * A host frozen past its lease (SIGSTOP), continued after another host took
 * its session over, serves that session nothing more: every call it is asked
 * answers `session_moved` (or `fleet_stale`, while it has not yet heard the
 * store since it was continued), soon naming the host that holds it, while the
 * new holder serves — real `tether serve` processes on a real PostgreSQL server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { REPO } from "../support/satellites.js";
import { freshDatabase } from "../support/pg-database.js";
import { Children, connectServe, runTether, startServe, type Message } from "../support/fleet-processes.js";

const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
let url: string;
const homes: string[] = [];
const children = new Children();

function home(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tether-frozen-${name}-`));
  homes.push(dir);
  return dir;
}

beforeAll(async () => {
  url = await freshDatabase("tether_fleet_frozen");
});

afterAll(async () => {
  await children.stopAll();
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

/** The code a tool.call answered with: the outcome's, or the JSON-RPC error's. */
const codeOf = (m: Message): string =>
  m.result !== undefined ? (m.result.outcome.ok ? "ok" : m.result.outcome.error.code) : (m.error?.data?.code ?? "?");

test("frozen past its lease, then continued after a takeover: the old host serves the session nothing more, the new one does", async () => {
  const a = home("a");
  const b = home("b");
  expect((await runTether(url, "fa", a, "install", WORKER)).code).toBe(0);
  expect((await runTether(url, "fa", a, "approve", "worker", "--yes")).code).toBe(0);
  const lease = { TETHER_FLEET_LEASE_MS: "1500" };
  const servedA = await startServe(children, url, "fa", a, lease);
  const clientA = await connectServe(servedA);
  expect((await clientA.call("session.open", { id: "frozen", workspace: a })).result).toBeDefined();
  expect(
    codeOf(await clientA.call("tool.call", { session: "frozen", tool: "run", arguments: { text: "before" } })),
  ).toBe("ok");

  servedA.child.kill("SIGSTOP");
  const servedB = await startServe(children, url, "fb", b, lease);
  const clientB = await connectServe(servedB);
  let opened: Message;
  for (;;) {
    opened = await clientB.call("session.open", { id: "frozen", workspace: b });
    if (opened.error?.data?.code !== "session_in_use") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(opened.error).toBeUndefined();
  servedA.child.kill("SIGCONT");

  // Asked at once and for a while after: never served on the old host.
  const answers: string[] = [];
  let last: Message = null;
  for (let i = 0; i < 20; i++) {
    last = await clientA.call("tool.call", { session: "frozen", tool: "run", arguments: { text: `after ${i}` } });
    answers.push(codeOf(last));
    await new Promise((r) => setTimeout(r, 100));
  }
  // Just continued, it may still be past its staleness bound (fleet_stale: it refuses every call) until it
  // hears the store; from then on each call is told the session moved. Served, never.
  expect(answers.join(" ")).toMatch(/^(fleet_stale )*session_moved( session_moved)*$/);
  expect(JSON.stringify(last)).toMatch(/served by host 'fb'/);
  expect(
    codeOf(await clientB.call("tool.call", { session: "frozen", tool: "run", arguments: { text: "new holder" } })),
  ).toBe("ok");

  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    // Once shipped: the old host ran one call of the session, the one before the freeze (ok, or lost when the
    // takeover came before its finish was shipped); nothing after. The new holder's call is ok.
    const rows = async () =>
      (
        await admin.query<{ host: string; outcome: string }>(
          "SELECT host, outcome FROM fleet_invocations WHERE session_id = 'frozen' ORDER BY host, id",
        )
      ).rows;
    for (let i = 0; i < 300 && !(await rows()).some((r) => r.host === "fb" && r.outcome === "ok"); i++)
      await new Promise((r) => setTimeout(r, 50));
    const shipped = await rows();
    expect(shipped.filter((r) => r.host === "fa")).toEqual([
      { host: "fa", outcome: expect.stringMatching(/^(ok|lost)$/) },
    ]);
    expect(shipped.filter((r) => r.host === "fb")).toEqual([{ host: "fb", outcome: "ok" }]);
  } finally {
    await admin.end();
    clientA.close();
    clientB.close();
  }
}, 120_000);

test("tether session release --host: a dead host's sessions open elsewhere at once, not after the lease", async () => {
  const a = home("a2");
  const b = home("b2");
  expect((await runTether(url, "dead", a, "approve", "worker", "--yes")).code).toBe(0);
  // A lease far longer than the test (10 min): without the release, the session stays in use that
  // long, so only the release can free it, however slowly a loaded machine starts the next host.
  const servedA = await startServe(children, url, "dead", a, { TETHER_FLEET_LEASE_MS: "600000" });
  const clientA = await connectServe(servedA);
  expect((await clientA.call("session.open", { id: "orphan", workspace: a })).result).toBeDefined();
  servedA.child.kill("SIGKILL");
  const servedB = await startServe(children, url, "alive", b);
  const clientB = await connectServe(servedB);
  expect((await clientB.call("session.open", { id: "orphan", workspace: b })).error.data.code).toBe("session_in_use");
  const released = await runTether(url, "alive", b, "session", "release", "--host", "dead");
  expect([released.code, released.stdout.trim().split("\n")[0]]).toEqual([
    0,
    "released host dead's leases of 1 session(s): orphan; they open on another host at once",
  ]);
  expect((await clientB.call("session.open", { id: "orphan", workspace: b })).error).toBeUndefined();
  expect(codeOf(await clientB.call("tool.call", { session: "orphan", tool: "run", arguments: { text: "x" } }))).toBe(
    "ok",
  );
  const usage = await runTether(url, "alive", b, "session", "release");
  expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining("tether session release --host <name>")]);
  clientA.close();
  clientB.close();
}, 120_000);
