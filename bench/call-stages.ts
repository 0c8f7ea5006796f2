/**
 * `npx tsx bench/call-stages.ts`: where one warm tiny call's time goes, by
 * process — the wall time of `Session.callTool` on echo, the broker's CPU
 * (this process, `process.cpuUsage`) and the satellite's CPU (its jailed
 * Deno, from /proc schedstat) per call, and how often the Deno side went to
 * sleep per call (its voluntary context switches: each a wake-up someone
 * paid for) — unhooked, and with one matching
 * `tool_call` hook (whose satellite's CPU counts too), and 8 calls in flight
 * on one session, with `[limits] concurrency` 1 (they queue) and 8 (all open
 * on one satellite). Then the syscalls per call of each process (`strace -c`
 * attached for one more round; skipped without strace). CPU per call is what
 * load on the machine disturbs least, so it is what a before/after compares:
 * the same file runs in an older checkout (copy it there) and the two tables
 * are read side by side. The raw floor (`bench/lib/floor.ts`: Node and Deno
 * doing the least they can over the same socket) runs in the same rounds, so
 * its rows are the floor each column is read against ("broker" is its Node
 * side, "satellite" its Deno side; a hooked call's floor is two Deno peers
 * asked in turn, so that three processes take turns on the CPUs as there).
 * The last rows enter the same call lower down the broker (its session scope,
 * its satellite's queue, the process itself): the difference between two rows
 * is what the layer between them costs. `N` calls per round (default 2000),
 * `ROUNDS` rounds (default 3, variants interleaved), medians printed.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CapHandler } from "../broker/base/capability.js";
import type { Session } from "../broker/sessions/session.js";
import {
  ECHO_DIR,
  NOP_GUARD_DIR,
  copyExtension,
  installApproved,
  openBroker,
  openSession,
  renamed,
  want,
  withLimit,
} from "./lib/home.js";
import { FloorPeer, bundleFloorEcho } from "./lib/floor.js";
import { comm, cpuNs, descendants, sleeps } from "./lib/procs.js";

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const ARGS = '{"text":"hi"}';

/** `read` summed over every Deno process under this one (satellites and the floor's peer). */
function overDeno(read: (pid: number) => number): number {
  let total = 0;
  for (const pid of descendants(process.pid)) if (comm(pid) === "deno") total += read(pid);
  return total;
}

interface Stage {
  wallUs: number;
  brokerCpuUs: number;
  satelliteCpuUs: number;
  /** How often the Deno side went to sleep (and so had to be woken). */
  satelliteSleeps: number;
}

interface Variant {
  readonly name: string;
  /** One call; the floor's is a raw request to its Deno peer. */
  readonly call: () => Promise<unknown>;
  /** Calls kept in flight. */
  readonly depth: number;
}

/** `n` calls, `depth` at a time (each finished call starts the next). */
async function drive(call: () => Promise<unknown>, n: number, depth: number): Promise<void> {
  let started = 0;
  const lane = async () => {
    while (started < n) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: depth }, lane));
}

async function measure({ call, depth }: Variant): Promise<Stage> {
  const sat0 = overDeno(cpuNs);
  const slept0 = overDeno(sleeps);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await drive(call, N, depth);
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sat = overDeno(cpuNs) - sat0;
  const slept = overDeno(sleeps) - slept0;
  return {
    wallUs: wall / N,
    brokerCpuUs: (cpu.user + cpu.system) / N,
    satelliteCpuUs: sat / 1000 / N,
    satelliteSleeps: slept / N,
  };
}

/** Every thread of `pid` (strace attaches to each). */
const threadsOf = (pid: number): number[] => readdirSync(`/proc/${pid}/task`).map(Number);

/** Starts `strace -c` on `pids`; the returned stop() ends it and resolves with the syscalls it counted. */
function countSyscalls(pids: number[]): { ready: Promise<void>; stop: () => Promise<number> } {
  const child = spawn("strace", ["-c", "-q", ...pids.flatMap((p) => ["-p", String(p)])], { stdio: "pipe" });
  let text = "";
  child.stderr.on("data", (b: Buffer) => (text += b.toString()));
  // strace prints nothing when attached; give it a moment to attach to every thread.
  const ready = new Promise<void>((r) => setTimeout(r, 500));
  const done = new Promise<number>((resolve) =>
    child.on("close", () => {
      const total = /^\s*100\.00\s+\S+\s+\S+\s+(\d+)/m.exec(text);
      resolve(total === null ? Number.NaN : Number(total[1]));
    }),
  );
  return {
    ready,
    stop: () => {
      child.kill("SIGINT");
      return done;
    },
  };
}

/** Syscalls per call of the broker and of the satellites, over one more round of `variant`. */
async function syscallsPerCall(variant: Variant): Promise<{ broker: number; satellites: number }> {
  const sats = descendants(process.pid).filter((pid) => comm(pid) === "deno");
  const broker = countSyscalls(threadsOf(process.pid));
  const satellites = countSyscalls(sats.flatMap(threadsOf));
  await Promise.all([broker.ready, satellites.ready]);
  await drive(variant.call, N, variant.depth);
  return { broker: (await broker.stop()) / N, satellites: (await satellites.stop()) / N };
}

const hasStrace = (): Promise<boolean> =>
  new Promise((resolve) => {
    const child = spawn("strace", ["-V"], { stdio: "ignore" });
    child.on("error", () => resolve(false));
    child.on("close", (code) => resolve(code === 0));
  });

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const echo = (session: Session) => () => session.callTool("echo", ARGS);

const home = mkdtempSync(join(tmpdir(), "tether-stages-"));
const broker = openBroker(home);
const floorScript = await bundleFloorEcho();
const floor = (await FloorPeer.boot(floorScript.script)).peer;
// A second peer: a hooked call's floor is a round trip to the hook's process, then one to the tool's.
const floorHook = (await FloorPeer.boot(floorScript.script)).peer;
try {
  await installApproved(broker, ECHO_DIR);
  await installApproved(broker, NOP_GUARD_DIR, false);
  const wide = join(home, "echo-open8");
  copyExtension(ECHO_DIR, wide, (m) => withLimit(renamed(m, "echo"), "concurrency = 8"));
  want(broker, "hooked", ["nop-guard"]);
  const plain = await openSession(broker, "plain", home, ["echo"]);
  const hooked = await openSession(broker, "hooked", home, ["echo", "nop-guard"]);
  // A second home: the same extension name, approved with concurrency 8.
  const wideHome = mkdtempSync(join(tmpdir(), "tether-stages-wide-"));
  const wideBroker = openBroker(wideHome);
  await installApproved(wideBroker, wide);
  const wideSession = await openSession(wideBroker, "wide", wideHome, ["echo"]);
  const floorCall = () => floor.call(ARGS);
  const floorTwoPeers = async () => {
    await floorHook.call(ARGS);
    return floor.call(ARGS);
  };
  // The same echo call entered lower down the broker's stack: what each layer above costs.
  const layers = (session: string, label: string): Variant[] => {
    const scope = (session === "wide" ? wideBroker : broker).scope(session);
    const live = scope.live.get("echo");
    if (live === undefined) throw new Error(`echo is not live in session '${session}'`);
    const request = { kind: "tool", name: "echo", args: ARGS, strand: "", deadlineMs: 30_000 } as const;
    const depth = session === "wide" ? 8 : 1;
    const refuse: CapHandler = async () => ({ ok: false, error: { code: "denied", msg: "not in this bench" } });
    return [
      {
        name: `${label}, at SessionScope.callTool (no hook bus)`,
        call: () => scope.callTool("echo", "echo", ARGS),
        depth,
      },
      {
        name: `${label}, at SatelliteSlot.invoke (no kernel: ledger, rule, capabilities)`,
        call: () => live.slot.invoke(request),
        depth,
      },
      {
        name: `${label}, at SatelliteProcess.run (no queue)`,
        call: () => live.slot.process!.run(request, refuse).outcome,
        depth,
      },
    ];
  };
  const variants: Variant[] = [
    { name: "raw floor (Node⇄Deno msgpack, no jail)", call: floorCall, depth: 1 },
    { name: "unhooked", call: echo(plain), depth: 1 },
    { name: "1 matching tool_call hook", call: echo(hooked), depth: 1 },
    { name: "raw floor, two peers in turn (a hooked call's floor)", call: floorTwoPeers, depth: 1 },
    { name: "raw floor, 8 in flight", call: floorCall, depth: 8 },
    { name: "8 in flight, concurrency 1 (they queue)", call: echo(plain), depth: 8 },
    { name: "8 in flight, concurrency 8 (one satellite)", call: echo(wideSession), depth: 8 },
    ...layers("plain", "unhooked"),
    ...layers("wide", "8 in flight on one satellite"),
  ];
  const results = new Map<string, Stage[]>(variants.map((v) => [v.name, []]));
  for (const v of variants) await drive(v.call, 300, v.depth);
  for (let round = 0; round < ROUNDS; round++) for (const v of variants) results.get(v.name)!.push(await measure(v));
  const counts = new Map<string, { broker: number; satellites: number }>();
  if (await hasStrace()) for (const v of variants) counts.set(v.name, await syscallsPerCall(v));
  console.log(`${N} calls × ${ROUNDS} rounds; medians per call`);
  console.log(
    "| variant | wall µs | broker CPU µs | satellite CPU µs | satellite sleeps | broker syscalls | satellite syscalls |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const [name, stages] of results) {
    const m = (pick: (s: Stage) => number, digits = 1) => median(stages.map(pick)).toFixed(digits);
    const c = counts.get(name);
    const sys = c === undefined ? "— | —" : `${c.broker.toFixed(1)} | ${c.satellites.toFixed(1)}`;
    console.log(
      `| ${name} | ${m((s) => s.wallUs)} | ${m((s) => s.brokerCpuUs)} | ${m((s) => s.satelliteCpuUs)} | ` +
        `${m((s) => s.satelliteSleeps, 2)} | ${sys} |`,
    );
  }
  for (const session of [plain, hooked, wideSession]) await session.close();
  await wideBroker.close();
  rmSync(wideHome, { recursive: true, force: true });
} finally {
  await floor.close();
  await floorHook.close();
  floorScript.cleanup();
  await broker.close();
  rmSync(home, { recursive: true, force: true });
}
