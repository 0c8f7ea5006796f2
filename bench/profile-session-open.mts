/**
 * A session's whole life with one satellite, over and over, for a profiler:
 * open (the satellite boots in the jail), one tiny call, close. Prints the
 * mean wall time, this process's CPU and its reaped children's CPU (the jailed
 * Deno and bwrap) per life. Profile the Node side with
 *   node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile-session-open.mts
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session } from "../broker/sessions/session.js";
import { ECHO_DIR, installApproved, openBroker } from "./lib/home.js";

/** This process's reaped children's user + system CPU, µs (/proc/self/stat's cutime and cstime). */
function childrenCpuUs(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  const ticks = Number(fields[13]) + Number(fields[14]);
  return (ticks * 1e6) / 100;
}

/** Every CPU's busy time on the machine, µs (/proc/stat: all but idle and iowait). */
function systemBusyUs(): number {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const busy = f.reduce((a, b) => a + b, 0) - f[3]! - f[4]!;
  return (busy * 1e6) / 100;
}

const home = mkdtempSync(join(tmpdir(), "prof-open-"));
const broker = openBroker(home);
await installApproved(broker, ECHO_DIR);
const N = Number(process.env.N ?? 40);

async function life(i: number): Promise<void> {
  const session = await Session.open(broker, { id: `s${i}`, workspace: home });
  await session.callTool("echo", '{"text":"hi"}');
  await session.close();
}

for (let i = 0; i < 5; i++) await life(-1 - i);
const t = process.hrtime.bigint();
const c0 = process.cpuUsage();
const k0 = childrenCpuUs();
const s0 = systemBusyUs();
for (let i = 0; i < N; i++) await life(i);
const c = process.cpuUsage(c0);
const ms = Number(process.hrtime.bigint() - t) / 1e6 / N;
console.log(
  `session life: mean ${ms.toFixed(1)} ms, node cpu ${((c.user + c.system) / 1000 / N).toFixed(1)} ms, ` +
    `children cpu ${((childrenCpuUs() - k0) / 1000 / N).toFixed(1)} ms, ` +
    `the machine's busy cpu ${((systemBusyUs() - s0) / 1000 / N).toFixed(1)} ms`,
);
await broker.close();
rmSync(home, { recursive: true, force: true });
