/**
 * Session leases on the run's real PostgreSQL server: a session open on one
 * host is refused to another (session_in_use, naming the holder); released,
 * the other takes it; the heartbeat keeps a lease past its ttl while its
 * holder lives; a holder killed mid-call (SIGKILL, a real child process) loses
 * its lease once it expires, and the host that takes the session over marks
 * the dead host's running call lost in the fleet's ledger (and it stays lost
 * when the dead host comes back and ships its own ending); a reaper marks the
 * running calls of expired leases nobody took.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { TetherError } from "../../broker/base/errors.js";
import { Ledger } from "../../broker/store/ledger.js";
import { openStore } from "../../broker/store/open.js";
import { LedgerShipper } from "../../broker/store/pg/ledger-shipper.js";
import { openPgStore, type PgStore } from "../../broker/store/pg/open.js";
import { SessionLeases } from "../../broker/store/pg/session-leases.js";
import { freshDatabase } from "../support/pg-database.js";
import { REPO } from "../support/satellites.js";

let url: string;
let fleet: PgStore;

beforeAll(async () => {
  url = await freshDatabase("tether_session_leases");
  fleet = await openPgStore(url);
});

afterAll(async () => {
  await fleet.close();
});

/** The lease error, or null when `acquire` succeeded. */
async function refusal(leases: SessionLeases, session: string): Promise<TetherError | null> {
  try {
    await leases.acquire(session);
    return null;
  } catch (err) {
    if (err instanceof TetherError) return err;
    throw err;
  }
}

/** Acquires, retrying while the session is in use (the holder's lease has to expire). */
async function acquireOnceFree(leases: SessionLeases, session: string): Promise<void> {
  for (let i = 0; ; i++) {
    const refused = await refusal(leases, session);
    if (refused === null) return;
    expect(refused.code).toBe("session_in_use");
    if (i > 600) throw new Error(`session ${session} never became free: ${refused.message}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const serverNow = async (): Promise<number> =>
  Number(
    (await fleet.pool.query<{ now: string }>("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now"))
      .rows[0]!.now,
  );
const leaseOf = async (session: string) =>
  (
    await fleet.pool.query<{ host: string; expires_at: string }>(
      "SELECT host, expires_at FROM session_leases WHERE session_id = $1",
      [session],
    )
  ).rows[0];

test("a session open on host a is refused to host b, naming a; released, b takes it", async () => {
  const a = new SessionLeases(fleet, "host-a");
  const b = new SessionLeases(fleet, "host-b");
  await a.acquire("s-refused");
  await a.acquire("s-refused"); // again: already a's
  const refused = await refusal(b, "s-refused");
  expect(refused?.code).toBe("session_in_use");
  const lease = (await leaseOf("s-refused"))!;
  expect(refused?.message).toBe(
    `Session 's-refused' is open on host 'host-a' until ${new Date(Number(lease.expires_at)).toISOString()}; close it there, or wait for its lease to expire if that host is down`,
  );
  await a.release("s-refused");
  await b.acquire("s-refused");
  expect(await leaseOf("s-refused")).toMatchObject({ host: "host-b" });
  expect(await refusal(a, "s-refused")).toMatchObject({ code: "session_in_use" });
  await Promise.all([a.close(), b.close()]);
  expect(await leaseOf("s-refused")).toBeUndefined();
});

test("the heartbeat keeps a lease past its ttl while its holder lives", async () => {
  const a = new SessionLeases(fleet, "host-a", { ttlMs: 900 });
  const b = new SessionLeases(fleet, "host-b", { ttlMs: 900 });
  await a.acquire("s-heartbeat");
  const first = Number((await leaseOf("s-heartbeat"))!.expires_at);
  // Wait, on the server's clock, until the first lease would have expired.
  while ((await serverNow()) <= first + 100) await new Promise((r) => setTimeout(r, 50));
  expect(await refusal(b, "s-heartbeat")).toMatchObject({
    code: "session_in_use",
    message: expect.stringContaining("host 'host-a'"),
  });
  expect(Number((await leaseOf("s-heartbeat"))!.expires_at)).toBeGreaterThan(first);
  await Promise.all([a.close(), b.close()]);
});

test("a host killed mid-call loses its session once its lease expires, and its running call is marked lost", async () => {
  const home = mkdtempSync(join(tmpdir(), "tether-lease-holder-"));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", join(REPO, "tests/fleet/fixtures/lease-holder.ts"), url, home, "host-dead", "s-crash", "800"],
    {
      cwd: REPO,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const b = new SessionLeases(fleet, "host-b", { ttlMs: 800 });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once("line", resolve);
      child.once("exit", (code) => reject(new Error(`the lease holder exited (${code}) before it was ready`)));
    });
    const { id } = JSON.parse(line) as { id: number };
    const row = async () =>
      (
        await fleet.pool.query<{ outcome: string; finished_at: string | null }>(
          "SELECT outcome, finished_at FROM fleet_invocations WHERE host = 'host-dead' AND id = $1",
          [id],
        )
      ).rows[0];
    expect(await row()).toEqual({ outcome: "running", finished_at: null });
    expect(await refusal(b, "s-crash")).toMatchObject({
      code: "session_in_use",
      message: expect.stringContaining("host 'host-dead'"),
    });

    child.kill("SIGKILL");
    await exited;
    await acquireOnceFree(b, "s-crash");
    expect(await leaseOf("s-crash")).toMatchObject({ host: "host-b" });
    const lost = await row();
    expect(lost).toEqual({ outcome: "lost", finished_at: expect.any(String) });

    // The dead host comes back on its home: its ledger closes the call as lost locally and
    // its shipper ships that; the fleet's row, already ended, stays as the takeover wrote it.
    const store = openStore(join(home, "tether.db"));
    const ledger = new Ledger(store);
    const shipper = new LedgerShipper(store, fleet, "host-dead");
    await shipper.close();
    expect(store.sqlite.prepare("SELECT outcome FROM invocations WHERE id = ?").get(id)).toEqual({ outcome: "lost" });
    expect(await row()).toEqual(lost);
    ledger.close();
    store.close();
  } finally {
    child.kill("SIGKILL");
    await b.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test("the reaper marks lost the running calls of expired leases nobody took over, and only those", async () => {
  const add = (host: string, id: number, session: string, outcome: string) =>
    fleet.pool.query(
      "INSERT INTO fleet_invocations (host, id, session_id, extension, kind, name, started_at, outcome) VALUES ($1, $2, $3, 'echo', 'tool', 'echo', 1, $4)",
      [host, id, session, outcome],
    );
  // A host that died long ago (its lease expired at 1 ms after the epoch), and one alive.
  await fleet.pool.query(
    "INSERT INTO session_leases (session_id, host, acquired_at, expires_at) VALUES ('s-reap-dead', 'host-gone', 0, 1)",
  );
  const alive = new SessionLeases(fleet, "host-alive");
  await alive.acquire("s-reap-alive");
  await add("host-gone", 1, "s-reap-dead", "running");
  await add("host-gone", 2, "s-reap-dead", "ok");
  await add("host-alive", 1, "s-reap-alive", "running");
  const reaper = new SessionLeases(fleet, "host-c");
  expect(await reaper.reapExpiredHosts()).toBe(1);
  const outcomes = await fleet.pool.query<{ host: string; id: string; outcome: string }>(
    "SELECT host, id, outcome FROM fleet_invocations WHERE session_id LIKE 's-reap-%' ORDER BY host, id",
  );
  expect(outcomes.rows).toEqual([
    { host: "host-alive", id: "1", outcome: "running" },
    { host: "host-gone", id: "1", outcome: "lost" },
    { host: "host-gone", id: "2", outcome: "ok" },
  ]);
  await alive.close();
});
