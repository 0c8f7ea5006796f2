/**
 * Close means closed: a broker closed (or destroyed) in the middle of each
 * kind of capability work — a request waiting for its answer, a redirect
 * chain, a body still streaming — waits for (or aborts) that work, writes
 * its audit rows before the store closes, and nothing writes to the store
 * afterwards: no uncaught exception, no row lost. A call asked just before
 * `close()` is among that work, even a process's first.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

let tmp: string;
let server: Server;
let port = 0;
const held: ServerResponse[] = [];
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => uncaught.push(err);

async function until(what: string, test: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !test(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A fetcher install whose one rule is this server (by address: a loopback name needs one). */
async function openBroker(name: string): Promise<Broker> {
  const home = join(tmp, name);
  const broker = Broker.open({
    ...envOptions(),
    home,
    log: silentLogger,
    resolve: async () => [{ address: "127.0.0.1", family: 4 }],
  });
  writeFileSync(join(broker.home, "policy.toml"), "[net]\nallow_private = true\n");
  const dir = join(tmp, `src-${name}`);
  cpSync(join(REPO, "tests/integration/fixtures/fetcher"), dir, { recursive: true });
  const file = join(dir, "manifest.toml");
  writeFileSync(
    file,
    readFileSync(file, "utf8").replace(
      /^allow = \[[\s\S]*?^\]$/m,
      `allow = ["http://held.test:${port}", "http://127.0.0.1:${port}"]`,
    ),
  );
  await broker.registry.install(dir);
  broker.registry.approve("fetcher");
  return broker;
}

/** The audit rows a closed broker's store holds for its fetches. */
function rowsOf(broker: Broker): Array<{ decision: string; rule: string; target: string }> {
  const db = new Database(join(broker.home, "tether.db"), { readonly: true });
  try {
    return db
      .prepare("select decision, rule, target from cap_audit where capability = 'net.fetch' order by id")
      .all() as Array<{ decision: string; rule: string; target: string }>;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-close-"));
  process.on("uncaughtException", onUncaught);
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url?.startsWith("/answer")) res.end("answered");
      else held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  port = (server.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  process.off("uncaughtException", onUncaught);
  for (const res of held) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(tmp, { recursive: true, force: true });
});

afterEach(() => {
  expect(uncaught).toEqual([]);
});

const KINDS: ReadonlyArray<
  readonly [kind: string, start: (res: ServerResponse) => void, finish: (res: ServerResponse) => void]
> = [
  ["a request waiting for its answer", () => {}, (res) => res.end("late answer")],
  ["a redirect chain", () => {}, (res) => res.writeHead(302, { location: `http://held.test:${port}/answer` }).end()],
  ["a body still streaming", (res) => res.writeHead(200).write("part one, "), (res) => res.end("part two")],
];

describe.each(KINDS)("in the middle of %s", (kind, start, finish) => {
  test("close() waits for the work, writes its audit row, and the store is closed after", async () => {
    const broker = await openBroker(`close-${kind.replace(/\W+/g, "-")}`);
    const before = held.length;
    const call = broker.callTool("fetcher", "fetch", JSON.stringify({ url: `http://held.test:${port}/hold` }), {
      session: "default",
    });
    await until("the server to hold the request", () => held.length > before);
    const res = held.at(-1)!;
    start(res);
    let closed = false;
    const closing = broker.close().then(() => (closed = true));
    // close() waits while the work is in flight …
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    finish(res);
    await closing;
    const outcome = await call;
    expect(outcome.ok).toBe(true);
    // … and every row of it is in the store: the final hop allowed.
    const rows = rowsOf(broker);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.filter((r) => r.decision !== "allowed")).toEqual([]);
    // Nothing writes to the closed store later: what the ledger's timer would do is a no-op, not a throw.
    expect(() => broker.ledger.flush()).not.toThrow();
    expect(rowsOf(broker)).toEqual(rows);
  });

  test("destroy() aborts the work: the server's connection closes, the row is written, nothing after", async () => {
    const broker = await openBroker(`destroy-${kind.replace(/\W+/g, "-")}`);
    const before = held.length;
    const call = broker.callTool("fetcher", "fetch", JSON.stringify({ url: `http://held.test:${port}/hold` }), {
      session: "default",
    });
    await until("the server to hold the request", () => held.length > before);
    const res = held.at(-1)!;
    start(res);
    const cut = new Promise<void>((resolve) => res.once("close", () => resolve()));
    await broker.destroy();
    await cut;
    const outcome = await call;
    expect(outcome.ok).toBe(false);
    const rows = rowsOf(broker);
    expect(rows).toHaveLength(1);
    expect(() => broker.ledger.flush()).not.toThrow();
    expect(rowsOf(broker)).toEqual(rows);
  });
});

test("a process's first call, asked just before close(), is let finish: it is under way once callTool returns", async () => {
  const home = join(tmp, "first-call");
  const setup = Broker.open({ ...envOptions(), home, log: silentLogger });
  await setup.registry.install(join(REPO, "manifests/echo"));
  setup.registry.approve("echo");
  await setup.close();
  // A fresh process: nothing that loads at its first use (Ajv, among others) is loaded yet.
  const url = (path: string) => JSON.stringify(pathToFileURL(join(REPO, path)).href);
  const script = join(tmp, "first-call.mts");
  writeFileSync(
    script,
    `import { Broker } from ${url("broker/broker.ts")};
import { silentLogger } from ${url("broker/base/log.ts")};
import { envOptions } from ${url("tests/support/env-options.ts")};
const broker = Broker.open({ ...envOptions(), home: ${JSON.stringify(home)}, log: silentLogger });
const call = broker.callTool("echo", "echo", '{"text":"hi"}', { session: "default" });
await broker.close();
console.log(JSON.stringify(await call));
`,
  );
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
    cwd: REPO,
    timeout: 60_000,
  });
  expect(JSON.parse(stdout)).toMatchObject({ ok: true, value: { content: [{ type: "text", text: "hi" }] } });
}, 90_000);
