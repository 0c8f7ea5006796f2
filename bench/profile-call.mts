/**
 * One warm tool call, over and over, for a profiler: Session.callTool of the
 * echo tool, 500 warm-up calls, then N timed ones (mean wall time and this
 * process's CPU per call). Profile the broker's side with
 *   node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile-call.mts
 * (N=3000 by default; the largest .cpuprofile is the main thread's; HOOKED=1
 * adds one extension whose tool_call hook proceeds).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { Session } from "../broker/sessions/session.js";
const HERE = dirname(fileURLToPath(import.meta.url));
const home = mkdtempSync(join(tmpdir(), "prof-"));
const broker = Broker.open({ home, log: createLogger({ level: "error" }) });
// HOOKED=1: a session where bench/fixtures/nop-guard's tool_call hook proceeds on every call.
const hooked = process.env.HOOKED === "1";
for (const dir of hooked ? ["../manifests/echo", "fixtures/nop-guard"] : ["../manifests/echo"]) {
  const { installed } = await broker.registry.install(join(HERE, dir));
  broker.registry.approve(installed.manifest.name);
}
const s = await Session.open(broker, { id: "p", workspace: home });
const args = '{"text":"hi"}';
for (let i = 0; i < 500; i++) await s.callTool("echo", args);
const N = Number(process.env.N ?? 3000);
const t = process.hrtime.bigint();
for (let i = 0; i < N; i++) await s.callTool("echo", args);
const us = Number(process.hrtime.bigint() - t) / 1000 / N;
console.log(`mean ${us.toFixed(1)} µs/call`);
const c0 = process.cpuUsage();
for (let i = 0; i < N; i++) await s.callTool("echo", args);
const c = process.cpuUsage(c0);
console.log(`node cpu ${((c.user + c.system) / N).toFixed(1)} µs/call`);
await s.close();
await broker.close();
rmSync(home, { recursive: true, force: true });
