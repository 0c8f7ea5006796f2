/**
 * One warm tool call, over and over, for a profiler: Session.callTool of the
 * echo tool, 500 warm-up calls, then N timed ones (mean wall time and this
 * process's CPU per call). Profile the broker's side with
 *   node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile-call.mts
 * (N=3000 by default; the largest .cpuprofile is the main thread's; HOOKED=1
 * adds one extension whose tool_call hook proceeds; DEPTH=8 keeps 8 calls in
 * flight on one satellite, the echo extension approved with concurrency 8).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { Session } from "../broker/sessions/session.js";
import { copyExtension, ECHO_DIR, NOP_GUARD_DIR, renamed, withLimit } from "./lib/home.js";
const home = mkdtempSync(join(tmpdir(), "prof-"));
const broker = Broker.open({ home, log: createLogger({ level: "error" }) });
// HOOKED=1: a session where bench/fixtures/nop-guard's tool_call hook proceeds on every call.
const hooked = process.env.HOOKED === "1";
const depth = Number(process.env.DEPTH ?? 1);
const echoDir = join(home, "echo-wide");
copyExtension(ECHO_DIR, echoDir, (m) => withLimit(renamed(m, "echo"), `concurrency = ${depth}`));
for (const dir of hooked ? [echoDir, NOP_GUARD_DIR] : [echoDir]) {
  const { installed } = await broker.registry.install(dir);
  broker.registry.approve(installed.manifest.name);
}
const s = await Session.open(broker, { id: "p", workspace: home });
const args = '{"text":"hi"}';
/** n calls, `depth` lanes each calling in turn. */
async function drive(n: number): Promise<void> {
  const lane = async (calls: number) => {
    for (let i = 0; i < calls; i++) await s.callTool("echo", args);
  };
  await Promise.all(Array.from({ length: depth }, () => lane(Math.ceil(n / depth))));
}
await drive(500);
const N = Number(process.env.N ?? 3000);
const t = process.hrtime.bigint();
await drive(N);
const us = Number(process.hrtime.bigint() - t) / 1000 / N;
console.log(`mean ${us.toFixed(1)} µs/call (${depth} in flight)`);
const c0 = process.cpuUsage();
await drive(N);
const c = process.cpuUsage(c0);
console.log(`node cpu ${((c.user + c.system) / N).toFixed(1)} µs/call`);
await s.close();
await broker.close();
rmSync(home, { recursive: true, force: true });
