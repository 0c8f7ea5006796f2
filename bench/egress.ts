/**
 * `make bench` (egress): one brokered `net.fetch` against a direct undici
 * request to the same loopback server, in one run.
 *
 * A brokered fetch is measured from inside one tool call that makes n fetches:
 * (time of a call making n fetches − time of a call making none) / n. That is
 * the capability's cost — frame to the broker, policy, audit, undici, frame
 * back — without the tool call's own round trip.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { fmt, median, table } from "./lib/stats.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PORT = 17399;
const N = 200;
const ROUNDS = 5;

const server = createServer((_req, res) => res.end("x".repeat(256)));
await new Promise<void>((resolve, reject) => {
  server.once("error", reject);
  server.listen(PORT, "127.0.0.1", () => resolve());
});
const url = `http://127.0.0.1:${PORT}/data`;

// Direct: undici with a keep-alive agent, as the broker's pinned agents are.
const agent = new Agent({ keepAliveTimeout: 10_000 });
async function direct(n: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const res = await request(url, { dispatcher: agent });
    await res.body.arrayBuffer();
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / n; // µs per fetch
}

const home = mkdtempSync(join(tmpdir(), "tether-bench-egress-"));
writeFileSync(join(home, "policy.toml"), "[net]\nallow_private = true\n");
const broker = Broker.open({ home, log: createLogger({ level: "error" }) });
await broker.registry.install(join(HERE, "fixtures/fetchloop"));
broker.registry.approve("fetchloop");

async function brokered(n: number): Promise<number> {
  const started = process.hrtime.bigint();
  const r = await broker.callTool("fetchloop", "fetch_n", JSON.stringify({ url, n }), { session: "default" });
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.msg}`);
  return Number(process.hrtime.bigint() - started) / 1e3; // µs per call
}

try {
  await direct(200); // warm up
  await brokered(50);
  const directUs: number[] = [];
  const perFetchUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    directUs.push(await direct(N));
    const empty: number[] = [];
    for (let i = 0; i < 20; i++) empty.push(await brokered(0));
    const full = await brokered(N);
    perFetchUs.push((full - median(empty)) / N);
  }
  const d = median(directUs);
  const b = median(perFetchUs);
  broker.ledger.flush();
  console.log("\n== net.fetch through the broker vs a direct undici request (loopback, 256-byte body, keep-alive)\n");
  console.log(
    table(
      ["path", "µs per fetch (median of rounds)", "fetches/s"],
      [
        ["direct undici (floor)", fmt(d), fmt(1e6 / d)],
        ["brokered net.fetch", fmt(b), fmt(1e6 / b)],
      ],
    ),
  );
  const ratio = b / d;
  console.log(`\nratio brokered/direct: ${ratio.toFixed(2)}×   target ≤ 1.5×   ${ratio <= 1.5 ? "PASS" : "MISS"}`);
} finally {
  await broker.close();
  await agent.close();
  server.close();
  rmSync(home, { recursive: true, force: true });
}
