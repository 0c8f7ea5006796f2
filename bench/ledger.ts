/**
 * `make bench` (ledger): what recording costs. The invocation ledger's start
 * row is a synchronous insert on the call path; finishes and audit rows are
 * batched. Measured two ways in one run:
 *  1. the writer alone: begin + finish (+ one audit row) per call, flushed in batches;
 *  2. a warm tool call through the Broker (approval check, argument schema,
 *     ledger) against the same satellite slot called directly (no ledger).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { bundleToTemp, slotFor } from "../tests/support/satellites.js";
import { fmt, median, summarise, table } from "./lib/stats.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const home = mkdtempSync(join(tmpdir(), "tether-bench-ledger-"));
const broker = Broker.open({ home, log: createLogger({ level: "error" }) });
const echoDir = join(HERE, "../manifests/echo");

try {
  // 1. The writer alone.
  const OPS = 20_000;
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < OPS; i++) {
      const id = broker.ledger.begin({ sessionId: "bench", extension: "echo", kind: "tool", name: "echo", strand: "" });
      broker.ledger.audit({
        invocationId: id,
        sessionId: "bench",
        extension: "echo",
        capability: "report.emit",
        target: "",
        decision: "allowed",
        rule: "builtin:report",
        bytes: 3,
      });
      broker.ledger.finish(id, "ok");
      if (i % 64 === 63) broker.ledger.flush(); // the 20 ms timer batches like this under load
    }
    broker.ledger.flush();
    rounds.push(Number(process.hrtime.bigint() - started) / 1e3 / OPS);
  }

  // 2. Through the broker vs the slot alone.
  await broker.registry.install(echoDir);
  broker.registry.approve("echo");
  const bundled = await bundleToTemp(echoDir);
  const slot = slotFor(bundled, { memoryMb: 64 });
  const args = '{"text":"hi"}';
  const N = 500;
  const viaBroker: bigint[] = [];
  const viaSlot: bigint[] = [];
  for (let i = 0; i < 50; i++) {
    await broker.callTool("echo", "echo", args, { session: "default" });
    await slot.invoke({ kind: "tool", name: "echo", args, strand: "", deadlineMs: 5_000 });
  }
  for (let i = 0; i < N; i++) {
    // Interleaved, so machine noise hits both alike.
    let t = process.hrtime.bigint();
    await broker.callTool("echo", "echo", args, { session: "default" });
    viaBroker.push(process.hrtime.bigint() - t);
    t = process.hrtime.bigint();
    await slot.invoke({ kind: "tool", name: "echo", args, strand: "", deadlineMs: 5_000 });
    viaSlot.push(process.hrtime.bigint() - t);
  }
  await slot.close();
  bundled.cleanup();
  const b = summarise(viaBroker);
  const s = summarise(viaSlot);
  console.log("\n== The ledger's cost\n");
  console.log(
    table(
      ["measure", "p50 µs", "p99 µs"],
      [
        ["ledger writer alone: begin + audit row + finish, batched flush (per call)", fmt(median(rounds)), "—"],
        ["warm tool call, slot alone (no ledger, no approval check)", fmt(s.p50), fmt(s.p99)],
        ["warm tool call through the Broker (approval, schema, ledger)", fmt(b.p50), fmt(b.p99)],
      ],
    ),
  );
  console.log(
    `\nbroker overhead per call: ${fmt(b.p50 - s.p50)} µs at p50 (${((b.p50 / s.p50 - 1) * 100).toFixed(0)}%)`,
  );
} finally {
  await broker.close();
  rmSync(home, { recursive: true, force: true });
}
