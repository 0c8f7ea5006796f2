/**
 * `npx tsx bench/call-stages.ts`: where one warm tiny call's time goes, by
 * process — the wall time of `Session.callTool` on echo, the broker's CPU
 * (this process, `process.cpuUsage`) and the satellite's CPU (its jailed
 * Deno, from /proc schedstat) per call — unhooked, and with one matching
 * `tool_call` hook (whose satellite's CPU counts too). CPU per call is what
 * load on the machine disturbs least, so it is what a before/after compares:
 * the same file runs in an older checkout (copy it there) and the two tables
 * are read side by side. `N` calls per round (default 2000), `ROUNDS` rounds
 * (default 3, variants interleaved), medians printed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Session } from "../broker/sessions/session.js";
import { ECHO_DIR, NOP_GUARD_DIR, installApproved, openBroker, openSession, want } from "./lib/home.js";
import { comm, cpuNs, descendants } from "./lib/procs.js";

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const ARGS = '{"text":"hi"}';

/** CPU used so far by every Deno process under this one, in ns. */
function satellitesCpuNs(): number {
  let total = 0;
  for (const pid of descendants(process.pid)) if (comm(pid) === "deno") total += cpuNs(pid);
  return total;
}

interface Stage {
  wallUs: number;
  brokerCpuUs: number;
  satelliteCpuUs: number;
}

async function measure(session: Session): Promise<Stage> {
  const sat0 = satellitesCpuNs();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await session.callTool("echo", ARGS);
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sat = satellitesCpuNs() - sat0;
  return { wallUs: wall / N, brokerCpuUs: (cpu.user + cpu.system) / N, satelliteCpuUs: sat / 1000 / N };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const home = mkdtempSync(join(tmpdir(), "tether-stages-"));
const broker = openBroker(home);
try {
  await installApproved(broker, ECHO_DIR);
  await installApproved(broker, NOP_GUARD_DIR, false);
  want(broker, "hooked", ["nop-guard"]);
  const variants: Array<[string, Session]> = [
    ["unhooked", await openSession(broker, "plain", home, ["echo"])],
    ["1 matching tool_call hook", await openSession(broker, "hooked", home, ["echo", "nop-guard"])],
  ];
  const results = new Map<string, Stage[]>(variants.map(([name]) => [name, []]));
  for (const [, session] of variants) for (let i = 0; i < 300; i++) await session.callTool("echo", ARGS);
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, session] of variants) results.get(name)!.push(await measure(session));
  console.log(`${N} calls × ${ROUNDS} rounds; medians per call`);
  console.log("| variant | wall µs | broker CPU µs | satellite CPU µs |");
  console.log("|---|---|---|---|");
  for (const [name, stages] of results) {
    const m = (pick: (s: Stage) => number) => median(stages.map(pick)).toFixed(1);
    console.log(`| ${name} | ${m((s) => s.wallUs)} | ${m((s) => s.brokerCpuUs)} | ${m((s) => s.satelliteCpuUs)} |`);
  }
  for (const [, session] of variants) await session.close();
} finally {
  await broker.close();
  rmSync(home, { recursive: true, force: true });
}
