/**
 * Hosts of a fleet as real processes over the run's real PostgreSQL server: an
 * operator installs and approves with the `tether` command on host a (its home,
 * `TETHER_STORE`), a `tether serve` on host b — another home, never told
 * anything but the store — serves the tool to a harness client over its
 * WebSocket; a `tether revoke` on host a stops host b's satellite and b's next
 * call is refused; `tether list` on b shows the fleet's state, and `tether
 * status` on a lists the hosts and the session b serves. A host killed
 * with SIGKILL mid-call: while its lease lives its session is `session_in_use`
 * elsewhere, naming it; once the lease expires the session reopens on another
 * host with its preferences, and the call that was running is `lost` in the
 * fleet's ledger.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { REPO } from "../support/satellites.js";
import { until } from "../support/wait.js";
import { freshDatabase } from "../support/pg-database.js";
import {
  Children,
  connectServe,
  runTether,
  startServe,
  type Message,
  type Served,
} from "../support/fleet-processes.js";

const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
let url: string;
const homes: string[] = [];
const children = new Children();

function home(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tether-fleet-${name}-`));
  homes.push(dir);
  return dir;
}

/** Runs `tether <args>` as host `host`. */
const tether = (host: string, dir: string, ...args: string[]) => runTether(url, host, dir, ...args);

async function serve(host: string, dir: string, env: Record<string, string> = {}): Promise<Served> {
  const served = await startServe(children, url, host, dir, env);
  expect(served.host).toBe(host);
  expect(served.shownStore).not.toContain(new URL(url).password);
  return served;
}

const connect = connectServe;

beforeAll(async () => {
  url = await freshDatabase("tether_fleet_hosts");
});

afterAll(async () => {
  await children.stopAll();
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

test("approve with the tether command on host a, call through tether serve on host b; revoke on a and b's satellite stops, its next call refused", async () => {
  const a = home("a");
  const b = home("b");
  const installed = await tether("a", a, "install", WORKER);
  expect(installed.code).toBe(0);
  expect(installed.stderr).toMatch(/published to the fleet as host a/);
  const approved = await tether("a", a, "approve", "worker", "--yes");
  expect(approved.code).toBe(0);

  const served = await serve("b", b);
  const client = await connect(served);
  try {
    expect((await client.call("session.open", { id: "s1", workspace: b })).result).toBeDefined();
    const ran = await client.call("tool.call", { session: "s1", tool: "run", arguments: { text: "hi" } });
    expect(ran.result.outcome.ok).toBe(true);
    expect(ran.result.extension).toBe("worker");

    const listed = await tether("b", b, "list");
    expect(listed.stdout).toMatch(/worker\s+1\.0\.0\s+approved/);

    // tether status on host a lists the fleet's hosts and the session host b serves now.
    const status = await tether("a", a, "status");
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^fleet: postgres:\/\/\S+, 2 hosts$/m);
    expect(status.stdout).toMatch(/^ {2}b +seen \d+ s ago, \S+, clock [+-]\d+ ms; sessions: s1 \(process \d+\)$/m);
    expect(status.stdout).toMatch(/^ {2}a +seen \d+ s ago, \S+, clock [+-]\d+ ms; no sessions$/m);
    expect(status.stdout).not.toContain(new URL(url).password);

    const revoked = await tether("a", a, "revoke", "worker");
    expect(revoked.code).toBe(0);
    await until(
      "host b to stop the revoked extension's satellite",
      () => /approval revoked/.test(served.err()),
      30_000,
    );
    const refused = await client.call("tool.call", { session: "s1", tool: "run", arguments: { text: "hi" } });
    expect(refused.result.outcome.ok).toBe(false);
    // The session re-planned without it: its tools are inactive, with the reason (docs/errors.md).
    expect(refused.result.outcome.error.code).toBe("inactive");
    expect(refused.result.outcome.error.msg).toMatch(/Extension 'worker' was revoked/);
    expect((await tether("b", b, "list")).stdout).toMatch(/worker\s+1\.0\.0\s+revoked/);
  } finally {
    client.close();
  }
});

test("kill -9 a host mid-call: its session is in use elsewhere until the lease expires, then reopens there with its preferences, and the call is lost", async () => {
  const a = home("a2");
  const b = home("b2");
  expect((await tether("a2", a, "approve", "worker", "--yes")).code).toBe(0);
  // Short, so the test sees it expire, yet renewed (every third of it) through a loaded machine's stalls.
  const lease = { TETHER_FLEET_LEASE_MS: "4000" };
  const servedA = await serve("a2", a, lease);
  const clientA = await connect(servedA);
  expect((await clientA.call("session.open", { id: "crash", workspace: a })).result).toBeDefined();
  expect(
    (await clientA.call("session.prefer", { session: "crash", extension: "worker", enabled: true })).result,
  ).toEqual({ extension: "worker", enabled: true });
  const ticking = clientA.start("tool.call", { session: "crash", tool: "ticks", arguments: { n: 1000 } });
  await until(
    "the call to report a tick",
    () => clientA.received.some((m) => m.method === "tool.partial" && m.params.id === ticking),
    30_000,
  );

  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const row = async () =>
      (
        await admin.query<{ outcome: string; host: string }>(
          "SELECT outcome, host FROM fleet_invocations WHERE session_id = 'crash' AND name = 'ticks'",
        )
      ).rows[0];
    let shipped: { outcome: string; host: string } | undefined;
    for (let i = 0; i < 3000 && shipped === undefined; i++) {
      shipped = await row();
      if (shipped === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(shipped).toEqual({ outcome: "running", host: "a2" });

    const servedB = await serve("b2", b, lease);
    const clientB = await connect(servedB);
    const refused = await clientB.call("session.open", { id: "crash", workspace: b });
    expect(refused.error.data.code).toBe("session_in_use");
    expect(refused.error.message).toMatch(/Session 'crash' is open on host 'a2' \(broker process \d+\)/);

    servedA.child.kill("SIGKILL");
    let reopened: Message;
    for (;;) {
      reopened = await clientB.call("session.open", { id: "crash", workspace: b });
      if (reopened.error?.data?.code !== "session_in_use") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(reopened.error).toBeUndefined();
    expect((await row())!.outcome).toBe("lost");
    const status = await clientB.call("session.status", { session: "crash" });
    const worker = status.result.find((r: Message) => r.name === "worker");
    expect(worker.preference).toEqual({ enabled: true, source: "session" });
    expect(
      (await clientB.call("tool.call", { session: "crash", tool: "run", arguments: { text: "after" } })).result.outcome
        .ok,
    ).toBe(true);
    clientB.close();
  } finally {
    await admin.end();
    clientA.close();
  }
});

test("a host silent past its beat and the staleness bound is named by tether status and tether doctor --store (a cut-off host cannot say so itself)", async () => {
  const a = home("a3");
  expect((await tether("a3", a, "status")).code).toBe(0);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    // One host last wrote a minute ago (it stopped, or cannot reach the store); another 2 s ago.
    await admin.query(
      "INSERT INTO hosts (name, seen_at, clock_skew_ms, version) VALUES ('cut', (extract(epoch from clock_timestamp()) * 1000)::bigint - 60000, 0, 'x'), ('fresh', (extract(epoch from clock_timestamp()) * 1000)::bigint - 2000, 0, 'x')",
    );
  } finally {
    await admin.end();
  }
  const status = await tether("a3", a, "status");
  expect(status.stdout).toMatch(
    /^ {2}cut +seen (6\d|[7-9]\d|\d{3}) s ago — silent past the staleness bound: stopped, or cut off from the store and refusing every call, x/m,
  );
  expect(status.stdout).toMatch(/^ {2}fresh +seen \d s ago, x/m);
  const doctor = await tether("a3", a, "doctor", "--store", url);
  expect(doctor.stdout).toMatch(
    /host cut has been silent for (6\d|[7-9]\d|\d{3}) s, past its 10 s beat and the 10 s staleness bound/,
  );
  expect(doctor.stdout).not.toMatch(/host fresh has been silent/);
});
