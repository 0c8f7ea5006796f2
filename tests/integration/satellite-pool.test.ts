/**
 * The satellite pool: an extension with `[limits] concurrency = N` has up to N
 * calls open at once per session — on one satellite, or spread over up to
 * `satellites = M` of them; each open call has its own token, and capability
 * calls are judged (and audited) as its own; calls on one strand keep their
 * order; the operator's ceilings bound the satellites. The tool holds on a
 * loopback server the test controls, so "running at once" is what the server
 * sees, not a timing.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";
import { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";

let tmp: string;
let server: Server;
let port = 0;
const held: ServerResponse[] = [];
let arrived = 0;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-pool-"));
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      arrived++;
      held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const res of held) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(tmp, { recursive: true, force: true });
});

let n = 0;
/** A broker with the fetcher installed under `limits` (TOML lines) and `policy` as policy.toml. */
async function openBroker(limits: string, policy = ""): Promise<Broker> {
  const name = `b${n++}`;
  const broker = Broker.open({ ...envOptions(), home: join(tmp, name), log: silentLogger });
  writeFileSync(join(broker.home, "policy.toml"), `[net]\nallow_private = true\n${policy}`);
  const dir = join(tmp, `src-${name}`);
  cpSync(join(REPO, "tests/integration/fixtures/fetcher"), dir, { recursive: true });
  const file = join(dir, "manifest.toml");
  const manifest = readFileSync(file, "utf8")
    .replace(/^allow = \[[\s\S]*?^\]$/m, `allow = ["http://127.0.0.1:${port}"]`)
    .replace(/^\[limits\]$/m, `[limits]\n${limits}`);
  writeFileSync(file, manifest);
  await broker.registry.install(dir);
  broker.registry.approve("fetcher");
  return broker;
}

const url = (path: string) => JSON.stringify({ url: `http://127.0.0.1:${port}/${path}` });
const release = () => held.splice(0).forEach((res) => res.end("done"));
const bootOf = (outcome: { ok: boolean; value?: unknown }) =>
  (outcome as { value: { content: [{ json: { boot: string } }] } }).value.content[0].json.boot;

test.each([
  ["three satellites", "concurrency = 3\nsatellites = 3", 3],
  ["one satellite", "concurrency = 3", 1],
])(
  "concurrency = 3 on %s: three calls run at once, the rest wait their turn, first come first served",
  async (_on, limits, satellites) => {
    const broker = await openBroker(limits);
    const session = await Session.open(broker, { id: "s", workspace: tmp });
    try {
      const pool = broker.scope("s").live.get("fetcher")!.slot;
      expect(pool.size).toBe(satellites);
      arrived = 0;
      const calls = [1, 2, 3, 4, 5].map((i) => session.callTool("fetch", url(`held/${i}`)));
      await until("three fetches held at once", () => arrived === 3);
      expect(pool.running).toBe(3);
      expect(pool.waiting).toBe(2);
      expect(pool.slots).toHaveLength(satellites);
      // One answer frees one place: exactly one more call starts.
      held.shift()!.end("done");
      await until("the fourth call to start", () => arrived === 4);
      expect(pool.waiting).toBe(1);
      release();
      await until("the fifth call to start", () => arrived === 5);
      release();
      const outcomes = await Promise.all(calls.map((c) => c.then((r) => r.outcome)));
      expect(outcomes.every((o) => o.ok)).toBe(true);
      // That many processes served them (each answers its own boot id).
      expect(new Set(outcomes.map(bootOf)).size).toBe(satellites);
      expect(pool.boots).toBe(satellites);
    } finally {
      await session.close();
      await broker.close();
    }
  },
);

test("three calls open on one satellite: each capability call is judged and audited as its own invocation's", async () => {
  const broker = await openBroker("concurrency = 3");
  const session = await Session.open(broker, { id: "s", workspace: tmp });
  try {
    arrived = 0;
    const calls = [1, 2, 3].map((i) => session.callTool("fetch", url(`own/${i}`)));
    await until("three fetches held at once", () => arrived === 3);
    // All three were let through, each while its own invocation was open on the same process.
    expect(broker.scope("s").live.get("fetcher")!.slot.boots).toBe(1);
    release();
    for (const r of await Promise.all(calls)) expect(r.outcome.ok).toBe(true);
    broker.ledger.flush();
    const rows = broker.store.sqlite
      .prepare(
        "select a.target, i.id, i.name, i.outcome from cap_audit a join invocations i on i.id = a.invocation_id " +
          "where a.capability = 'net.fetch' order by a.target",
      )
      .all() as Array<{ target: string; id: number; outcome: string }>;
    expect(rows.map((r) => r.target.replace(/^.*\//, ""))).toEqual(["1", "2", "3"]);
    // Three invocations, one audit row each: no fetch was put down to another call's invocation.
    expect(new Set(rows.map((r) => r.id)).size).toBe(3);
    expect(rows.every((r) => r.outcome === "ok")).toBe(true);
  } finally {
    await session.close();
    await broker.close();
  }
});

test("a satellite killed with three calls open on it fails those three; the waiting fourth runs on a fresh one", async () => {
  const broker = await openBroker("concurrency = 3");
  const session = await Session.open(broker, { id: "s", workspace: tmp });
  try {
    const pool = broker.scope("s").live.get("fetcher")!.slot;
    arrived = 0;
    const calls = [1, 2, 3, 4].map((i) => session.callTool("fetch", url(`all/${i}`)).then((r) => r.outcome));
    await until("three fetches held at once", () => arrived === 3);
    process.kill(pool.process!.pid!, "SIGKILL");
    await until("the fourth call to start", () => arrived === 4);
    release();
    const outcomes = await Promise.all(calls);
    expect(outcomes.slice(0, 3).map((o) => (o.ok ? "ok" : o.error.code))).toEqual(["crashed", "crashed", "crashed"]);
    expect(outcomes[3]!.ok).toBe(true);
    expect(pool.boots).toBe(2);
  } finally {
    await session.close();
    await broker.close();
  }
});

test("a satellite of the pool killed mid-call fails that call alone; the others finish and the pool serves on", async () => {
  const broker = await openBroker("concurrency = 3\nsatellites = 3");
  const session = await Session.open(broker, { id: "s", workspace: tmp });
  try {
    const pool = broker.scope("s").live.get("fetcher")!.slot;
    arrived = 0;
    const calls = [1, 2, 3, 4].map((i) => session.callTool("fetch", url(`kill/${i}`)).then((r) => r.outcome));
    await until("three fetches held at once", () => arrived === 3);
    const victim = pool.slots.find((slot) => slot.state === "busy")!;
    process.kill(victim.process!.pid!, "SIGKILL");
    // Its call fails; the waiting fourth call takes the freed place (on a fresh satellite).
    await until("the fourth call to start", () => arrived === 4);
    release();
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(3);
    expect(outcomes.find((o) => !o.ok)).toMatchObject({ ok: false, error: { code: "crashed" } });
    arrived = 0;
    const again = session.callTool("fetch", url("after"));
    await until("the next call to start", () => arrived === 1);
    release();
    expect((await again).outcome.ok).toBe(true);
  } finally {
    await session.close();
    await broker.close();
  }
});

test("calls on one strand never run at once, in order; another strand passes them", async () => {
  const broker = await openBroker("concurrency = 3");
  const session = await Session.open(broker, { id: "s", workspace: tmp });
  try {
    const pool = broker.scope("s").live.get("fetcher")!.slot;
    arrived = 0;
    const order: string[] = [];
    const one = (path: string, strand: string) =>
      session.callTool("fetch", url(path), { strand }).then(() => order.push(path));
    const a1 = one("a1", "a");
    await until("a1 held", () => arrived === 1);
    const a2 = one("a2", "a");
    const b1 = one("b1", "b");
    await until("b1 held beside a1", () => arrived === 2);
    expect(pool.running).toBe(2);
    expect(pool.waiting).toBe(1); // a2, behind a1 on its strand
    release();
    await until("a2 held", () => arrived === 3);
    release();
    await Promise.all([a1, a2, b1]);
    expect(order.indexOf("a1")).toBeLessThan(order.indexOf("a2"));
  } finally {
    await session.close();
    await broker.close();
  }
});

test("the default is one satellite: calls run one at a time", async () => {
  const broker = await openBroker("");
  const session = await Session.open(broker, { id: "s", workspace: tmp });
  try {
    const pool = broker.scope("s").live.get("fetcher")!.slot;
    expect(pool.size).toBe(1);
    arrived = 0;
    const calls = [1, 2].map((i) => session.callTool("fetch", url(`one/${i}`)));
    await until("one fetch held", () => arrived === 1);
    expect(pool.running).toBe(1);
    expect(pool.waiting).toBe(1);
    release();
    await until("the second call to start", () => arrived === 2);
    release();
    await Promise.all(calls);
  } finally {
    await session.close();
    await broker.close();
  }
});

test.each([
  ["the operator's max_concurrency", "concurrency = 8\nsatellites = 8", "[satellites]\nmax_concurrency = 2\n", 2],
  [
    "what fits in max_pool_memory_mb at memory_mb each",
    "concurrency = 8\nsatellites = 8",
    "[satellites]\nmax_pool_memory_mb = 200\n",
    3,
  ], // 200 / 64
  ["a broken policy file", "concurrency = 8\nsatellites = 8", "[satellites]\nmax_concurrency = 0\n", 1],
  ["the default ceiling (4)", "concurrency = 16\nsatellites = 16", "", 4],
  ["its concurrency", "concurrency = 2\nsatellites = 4", "", 2],
  ["its default of one", "concurrency = 16", "", 1],
])("the pool is bounded by %s", async (_what, limits, policy, size) => {
  const broker = await openBroker(limits, policy);
  try {
    await broker.scope("s").activate("fetcher");
    expect(broker.scope("s").live.get("fetcher")!.slot.size).toBe(size);
  } finally {
    await broker.close();
  }
});

test.each([
  ["concurrency = 3", "up to 3 calls open at once per session, in one satellite"],
  ["concurrency = 3\nsatellites = 2", "up to 3 calls open at once per session, in up to 2 satellites"],
  ["", "one satellite per session (calls one at a time)"],
])("review shows how many calls and satellites a session may run (%j)", async (limits, shown) => {
  const broker = await openBroker(limits);
  try {
    const installed = broker.registry.get("fetcher")!;
    const text = renderReview(
      buildReview(installed, broker.registry.status(installed), broker.registry.latestApproval("fetcher")),
      installed,
    );
    expect(text).toContain(shown);
  } finally {
    await broker.close();
  }
});

test("a manifest asking for more than 16 calls or satellites is refused at install, naming the field", async () => {
  await expect(openBroker("concurrency = 17")).rejects.toThrow(/limits\.concurrency/);
  await expect(openBroker("satellites = 17")).rejects.toThrow(/limits\.satellites/);
});
