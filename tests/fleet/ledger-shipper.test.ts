/**
 * The ledger shipper on the run's real PostgreSQL server: a host's local
 * ledger (a real home store and Ledger) reaches the fleet's tables equal to
 * the local rows; a row shipped while running is updated when it finishes; a
 * shipper started again from nothing (a host restarting after a crash) ships
 * what was not shipped and nothing twice; and while the server cannot be
 * reached nothing is lost, the outage is logged once, and shipping resumes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type { LogFields } from "../../broker/base/log.js";
import { Ledger } from "../../broker/store/ledger.js";
import { openStore, type Store } from "../../broker/store/open.js";
import { LedgerShipper } from "../../broker/store/pg/ledger-shipper.js";
import { openPgStore, type PgStore } from "../../broker/store/pg/open.js";
import { fleetCapAudit, fleetHookTraces, fleetInvocations } from "../../broker/store/pg/schema.js";
import { capAudit, hookTraces, invocations } from "../../broker/store/schema.js";
import { freshDatabase } from "../support/pg-database.js";

let url: string;
let fleet: PgStore;
const homes: string[] = [];

beforeAll(async () => {
  url = await freshDatabase("tether_ledger_shipper");
  fleet = await openPgStore(url);
});

afterAll(async () => {
  await fleet.close();
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function localStore(): Store {
  const home = mkdtempSync(join(tmpdir(), "tether-shipper-"));
  homes.push(home);
  return openStore(join(home, "tether.db"));
}

/** Every ledger table of one host, local and in the fleet, in one shape (the fleet's without `host`). */
async function both(store: Store, host: string) {
  const strip = <T extends { host: string }>(rows: T[]): Omit<T, "host">[] =>
    rows.map(({ host: _host, ...rest }) => rest);
  const local = {
    invocations: store.orm.select().from(invocations).orderBy(invocations.id).all(),
    capAudit: store.orm.select().from(capAudit).orderBy(capAudit.id).all(),
    hookTraces: store.orm.select().from(hookTraces).orderBy(hookTraces.id).all(),
  };
  const shipped = {
    invocations: strip(
      await fleet.orm
        .select()
        .from(fleetInvocations)
        .where(eq(fleetInvocations.host, host))
        .orderBy(fleetInvocations.id),
    ),
    capAudit: strip(
      await fleet.orm.select().from(fleetCapAudit).where(eq(fleetCapAudit.host, host)).orderBy(fleetCapAudit.id),
    ),
    hookTraces: strip(
      await fleet.orm.select().from(fleetHookTraces).where(eq(fleetHookTraces.host, host)).orderBy(fleetHookTraces.id),
    ),
  };
  return { local, shipped };
}

/** One call's worth of ledger rows: begin, an audit row and a hook trace; finished unless `running`. */
function call(ledger: Ledger, session: string, n: number, running = false): number {
  const id = ledger.begin({
    sessionId: session,
    extension: "echo",
    kind: "tool",
    name: `echo${n}`,
    strand: n % 2 === 0 ? "" : "s1",
    hooksBypassed: n % 3 === 0,
  });
  ledger.audit({
    invocationId: id,
    sessionId: session,
    extension: "echo",
    capability: "net.fetch",
    target: `https://x/${n}`,
    decision: n % 2 === 0 ? "allowed" : "denied",
    rule: "r",
    bytes: n,
    secret: n % 4 === 0 ? "TOKEN" : undefined,
  });
  ledger.trace([
    {
      sessionId: session,
      event: "tool_call",
      subject: `echo${n}`,
      aboutInvocationId: id,
      hookInvocationId: null,
      extension: "guard",
      answer: "proceed",
      detail: "",
      durationMs: 0.25 * n,
    },
  ]);
  if (!running) ledger.finish(id, n % 5 === 0 ? "timeout" : "ok");
  return id;
}

test("a host's invocations, audit and traces reach the fleet equal to its local rows", async () => {
  const store = localStore();
  const ledger = new Ledger(store);
  const shipper = new LedgerShipper(store, fleet, "host-equal");
  for (let n = 0; n < 25; n++) call(ledger, "s-equal", n);
  ledger.flush();
  await shipper.flush();
  const { local, shipped } = await both(store, "host-equal");
  expect(local.invocations).toHaveLength(25);
  expect(local.capAudit).toHaveLength(25);
  expect(local.hookTraces).toHaveLength(25);
  expect(shipped).toEqual(local);
  expect(shipper.stats).toEqual({ shipped: 75, lagRows: 0 });
  await shipper.close();
  ledger.close();
  store.close();
});

test("two brokers on one home commit invocations out of id order (ids are reserved ahead): every row is shipped", async () => {
  const store = localStore();
  const other = openStore(store.path);
  const [a, b] = [new Ledger(store), new Ledger(other)];
  const shipper = new LedgerShipper(store, fleet, "host-two-writers");
  for (let round = 0; round < 6; round++) {
    // a's ids are below b's (a reserved first), b's batch commits first and is shipped first.
    call(a, "s-two", round * 2);
    call(b, "s-two", round * 2 + 1);
    b.flush();
    await shipper.flush();
    a.flush();
    await shipper.flush();
  }
  const { local, shipped } = await both(store, "host-two-writers");
  expect(local.invocations).toHaveLength(12);
  expect(shipped).toEqual(local);
  await shipper.close();
  a.close();
  b.close();
  other.close();
  store.close();
});

test("a row shipped while running is updated when it finishes", async () => {
  const store = localStore();
  const ledger = new Ledger(store);
  const shipper = new LedgerShipper(store, fleet, "host-running");
  const id = call(ledger, "s-running", 1, true);
  ledger.flush();
  await shipper.flush();
  let { shipped } = await both(store, "host-running");
  expect(shipped.invocations).toEqual([
    expect.objectContaining({ id, outcome: "running", finishedAt: null, durationMs: null }),
  ]);

  ledger.finish(id, "ok");
  ledger.flush();
  await shipper.flush();
  const after = await both(store, "host-running");
  shipped = after.shipped;
  expect(shipped.invocations).toEqual([
    expect.objectContaining({ id, outcome: "ok", finishedAt: expect.any(Number), durationMs: expect.any(Number) }),
  ]);
  expect(shipped).toEqual(after.local);
  await shipper.close();
  ledger.close();
  store.close();
});

test("a shipper started again from nothing ships what was not shipped, and nothing twice", async () => {
  const store = localStore();
  const ledger = new Ledger(store);
  const first = new LedgerShipper(store, fleet, "host-restart");
  for (let n = 0; n < 10; n++) call(ledger, "s-restart", n);
  const running = call(ledger, "s-restart", 10, true);
  ledger.flush();
  await first.flush();
  // The "crash": more rows land locally that this shipper never ships, and the running call finishes.
  for (let n = 11; n < 18; n++) call(ledger, "s-restart", n);
  ledger.finish(running, "ok");
  ledger.flush();
  // (`first` is dropped without close, which would flush.)

  // The shipper of the restarted host knows only what the fleet says.
  const second = new LedgerShipper(store, fleet, "host-restart");
  await second.flush();
  const { local, shipped } = await both(store, "host-restart");
  expect(shipped).toEqual(local);
  expect(shipped.invocations.find((r) => r.id === running)).toMatchObject({ outcome: "ok" });
  // Only what the first did not write: the 7 new calls' 3 rows each, and the finish of the call it shipped running.
  expect(second.stats.shipped).toBe(7 * 3 + 1);
  // And a third one, with nothing new, ships nothing.
  const third = new LedgerShipper(store, fleet, "host-restart");
  await third.flush();
  expect(third.stats).toEqual({ shipped: 0, lagRows: 0 });
  await Promise.all([first.close(), second.close(), third.close()]);
  ledger.close();
  store.close();
});

test("rows written while the fleet's server cannot be reached are shipped once it can; the outage is logged once", async () => {
  // A TCP relay in front of the server: closing it is the server becoming unreachable.
  const target = new URL(url);
  const relay = new Relay("127.0.0.1", Number(target.port));
  const port = await relay.up(0);
  const relayed = new URL(url);
  relayed.port = String(port);
  const store = localStore();
  const ledger = new Ledger(store);
  const viaRelay = await openPgStore(relayed.toString(), { connectTimeoutMs: 2000 });
  const logged: Array<{ msg: string; fields: LogFields }> = [];
  const shipper = new LedgerShipper(store, viaRelay, "host-outage", {
    everyMs: 10,
    log: (msg, fields) => logged.push({ msg, fields }),
  });
  shipper.start();
  try {
    for (let n = 0; n < 5; n++) call(ledger, "s-outage", n);
    const stillRunning = call(ledger, "s-outage", 5, true);
    ledger.flush();
    await shipper.flush();

    await relay.down();
    for (let n = 6; n < 40; n++) call(ledger, "s-outage", n);
    ledger.finish(stillRunning, "ok");
    ledger.flush();
    // Several failed ticks: the flush's and the timer's.
    for (let i = 0; i < 3; i++) await expect(shipper.flush()).rejects.toThrow();
    await waitFor("the background ticks to fail too", async () => logged.length > 0);
    expect(shipper.stats.lagRows).toBe(34 * 3);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.msg).toMatch(/cannot ship to the fleet store/);
    expect(logged[0]!.fields).toMatchObject({ host: "host-outage" });
    expect(JSON.stringify(logged)).not.toContain(target.password);

    await relay.up(port);
    await waitFor("the timer to ship again", async () => shipper.stats.lagRows === 0 && logged.length === 2);
    await shipper.flush();
    const { local, shipped } = await both(store, "host-outage");
    expect(shipped).toEqual(local);
    expect(shipped.invocations).toHaveLength(40);
    expect(shipped.invocations.find((r) => r.id === stillRunning)).toMatchObject({ outcome: "ok" });
    expect(logged.map((l) => l.msg)).toEqual([
      expect.stringMatching(/cannot ship/),
      expect.stringMatching(/shipping again/),
    ]);
  } finally {
    await shipper.close().catch(() => {});
    await viaRelay.close();
    await relay.down();
    ledger.close();
    store.close();
  }
});

/** Polls an asynchronous condition every 20 ms (bounded by jest's test timeout). */
async function waitFor(what: string, test: () => Promise<boolean>): Promise<void> {
  for (let i = 0; !(await test()); i++) {
    if (i > 1500) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Forwards TCP connections to a server while up; down closes the port and every connection through it. */
class Relay {
  #server: Server | null = null;
  readonly #sockets = new Set<Socket>();
  constructor(
    readonly host: string,
    readonly port: number,
  ) {}

  up(port: number): Promise<number> {
    const server = createServer((client) => {
      const upstream = connect(this.port, this.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    this.#server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
    });
  }

  down(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#sockets) s.destroy();
    return new Promise((resolve) => (server === null ? resolve() : server.close(() => resolve())));
  }
}
