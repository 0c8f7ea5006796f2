/**
 * Faults under load, with brokers as processes on a real PostgreSQL server:
 * host fb (a real `tether serve`, reaching the store through a proxy the test
 * cuts) takes one call after another while every backend of the database is
 * terminated, then while it is cut off from the store for longer than its
 * staleness bound — and host fa revokes the extension meanwhile. Asserted:
 * every call is answered, ok or refused with a named code; no call sent later
 * than the bound after the revocation is served; every call fb started has its
 * row in `fleet_invocations` exactly once, as in its own ledger.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { REPO } from "../support/satellites.js";
import { freshDatabase } from "../support/pg-database.js";
import { CutProxy } from "../support/cut-proxy.js";
import { until } from "../support/wait.js";
import { Children, connectServe, runTether, startServe, type Message } from "../support/fleet-processes.js";

const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
const BOUND_MS = 1000;
let url: string;
const homes: string[] = [];
const children = new Children();
let proxy: CutProxy | null = null;

function home(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tether-faults-${name}-`));
  homes.push(dir);
  return dir;
}

beforeAll(async () => {
  url = await freshDatabase("tether_fleet_faults");
});

afterAll(async () => {
  await children.stopAll();
  await proxy?.close();
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

const codeOf = (m: Message): string =>
  m.result !== undefined
    ? m.result.outcome.ok
      ? "ok"
      : m.result.outcome.error.code
    : (m.error?.data?.code ?? `rpc ${m.error?.code ?? "?"}`);

async function sql<T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    return (await admin.query<T>(text, params)).rows;
  } finally {
    await admin.end();
  }
}

test("backends terminated, a partition past the bound and a revocation during it, under load: every call answered with a named code, none served past the bound, every row shipped once", async () => {
  const a = home("a");
  const b = home("b");
  expect((await runTether(url, "fa", a, "install", WORKER)).code).toBe(0);
  expect((await runTether(url, "fa", a, "approve", "worker", "--yes")).code).toBe(0);
  const u = new URL(url);
  proxy = await CutProxy.start({ host: u.hostname, port: Number(u.port) });
  writeFileSync(join(b, "policy.toml"), `[fleet]\nmax_staleness_ms = ${BOUND_MS}\n`);
  const served = await startServe(children, proxy.through(url), "fb", b);
  const client = await connectServe(served);
  expect((await client.call("session.open", { id: "load", workspace: b })).result).toBeDefined();

  const answers: Array<{ code: string; sentAt: number }> = [];
  let running = true;
  const load = (async () => {
    for (let i = 0; running; i++) {
      const sentAt = Date.now();
      answers.push({
        code: codeOf(
          await client.call("tool.call", { session: "load", tool: "run", arguments: { text: `call ${i}` } }),
        ),
        sentAt,
      });
    }
  })();
  const okCount = () => answers.filter((x) => x.code === "ok").length;
  const settle = async (what: string, more: number) => {
    const before = okCount();
    await until(what, () => okCount() >= before + more, 60_000);
  };

  await settle("calls to be served", 20);
  // Every backend of the database terminated: the pool, the listener and the shipper reconnect.
  const killed = await sql<{ pid: number }>(
    "SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
  );
  expect(killed.length).toBeGreaterThan(0);
  await settle("calls to be served after every backend was terminated", 20);

  // Cut off from the store; the extension revoked on fa meanwhile (fa reaches the store directly).
  proxy.cut();
  const revoked = await runTether(url, "fa", a, "revoke", "worker");
  expect(revoked.code).toBe(0);
  const revokedBy = Date.now();
  await until("fb to refuse as stale", () => answers.some((x) => x.code === "fleet_stale"), 30_000);
  await until(
    "a refusal sent later than the bound after the revocation",
    () => answers.some((x) => x.code === "fleet_stale" && x.sentAt > revokedBy + BOUND_MS),
    30_000,
  );
  proxy.restore();
  await until(
    "fb to refuse the revoked extension",
    () => answers.some((x) => x.sentAt > revokedBy && /^(not_approved|inactive)$/.test(x.code)),
    30_000,
  );
  const count = answers.length;
  await until("more calls to be answered after the revocation was applied", () => answers.length >= count + 10, 30_000);
  running = false;
  await load;

  const codes = new Set(answers.map((x) => x.code));
  for (const code of codes) expect(["ok", "fleet_stale", "not_approved", "inactive"]).toContain(code);
  expect(codes.has("fleet_stale")).toBe(true);
  // The bound: no call sent later than it after the revocation committed (before `tether revoke` returned) was served.
  expect(answers.filter((x) => x.code === "ok" && x.sentAt > revokedBy + BOUND_MS)).toEqual([]);

  // Every call fb started is in the fleet's ledger exactly once, as in its own.
  const local = () => {
    const db = new Database(join(b, "tether.db"), { readonly: true, fileMustExist: true });
    try {
      return db.prepare("SELECT id, outcome FROM invocations WHERE session_id = 'load' ORDER BY id").all() as Array<{
        id: number;
        outcome: string;
      }>;
    } finally {
      db.close();
    }
  };
  const shipped = () =>
    sql<{ id: string; outcome: string }>(
      "SELECT id, outcome FROM fleet_invocations WHERE host = 'fb' AND session_id = 'load' ORDER BY id",
    );
  const same = async () => {
    const mine = local();
    const theirs = await shipped();
    return (
      mine.length > 0 &&
      theirs.length === mine.length &&
      theirs.every((r, i) => Number(r.id) === mine[i]!.id && r.outcome === mine[i]!.outcome)
    );
  };
  for (let i = 0; !(await same()); i++) {
    if (i > 600)
      throw new Error(
        `fb's ledger did not reach the fleet: ${local().length} rows here, ${(await shipped()).length} shipped`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
  const rows = await shipped();
  expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
  expect(rows.filter((r) => r.outcome === "running")).toEqual([]);
  // Each served call started a row; a refused one (stale, revoked) ran nothing.
  expect(rows.filter((r) => r.outcome === "ok").length).toBe(okCount());
  client.close();
}, 240_000);
