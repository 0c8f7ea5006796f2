/**
 * `make bench` (scale): what Tether costs as it grows, all through the
 * library (`Session`), in the real jail:
 *
 *  1. calls/s with 1, 2, 4 and 8 sessions calling in parallel (each its own
 *     echo satellite, one call in flight per session), interleaved in rounds;
 *  2. session open time, and the memory of the broker and every satellite
 *     process, with 1, 5 and 20 extensions per session (copies of
 *     bench/fixtures/echo-n with distinct names, installed and approved);
 *  3. one satellite's private memory (Private_Clean + Private_Dirty of the
 *     jailed deno, /proc/<pid>/smaps_rollup) fresh and after 200 calls, and
 *     what an idle session costs.
 *
 * BENCH_SCALE shrinks the windows and repetitions.
 */
import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import type { Broker } from "../broker/broker.js";
import { findBwrap } from "../broker/jail/sandbox.js";
import type { Session } from "../broker/sessions/session.js";
import {
  ECHO_DIR,
  REPO,
  checkReport,
  copyExtension,
  installApproved,
  openBroker,
  openSession,
  renamed,
  want,
} from "./lib/home.js";
import { closedLoop } from "./lib/loop.js";
import { comm, descendants, memoryOf, privateKiB, rssKiB } from "./lib/procs.js";
import { loadAverage, log, runJailBench, warnLeftovers, warnStrays } from "./lib/run.js";
import { fmt, median, table } from "./lib/stats.js";

const SCALE = Number(process.env.BENCH_SCALE ?? "1") || 1;
const ROUNDS = 3;
const WINDOW_MS = Math.max(100, Math.round(300 * SCALE));
const SESSIONS = [1, 2, 4, 8] as const;
const EXTENSIONS = [1, 5, 20] as const;
const OPEN_REPS = Math.max(2, Math.round(3 * SCALE)); // after one discarded rep (it warms each artifact's Deno cache)
const IDLE_SESSIONS = 4;
const TINY = JSON.stringify({ text: "hi" });
const BIG = JSON.stringify({ text: "x".repeat(64 * 1024) });

// A full GC before each memory reading of the broker, so its heap is what is live.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (kib: number) => `${fmt(kib / 1024)} MiB`;

/** Our satellites' processes (bwrap, its pid-namespace init, deno...): every descendant but esbuild's service. */
function satelliteProcesses(): number[] {
  return descendants(process.pid).filter((pid) => pid !== process.pid && comm(pid) !== "esbuild");
}

/** The broker (this process) and all its satellites' processes. */
function totalMemory(): { brokerRss: number; satellites: ReturnType<typeof memoryOf>; processes: number } {
  gc();
  const procs = satelliteProcesses();
  return { brokerRss: rssKiB(process.pid), satellites: memoryOf(procs), processes: procs.length };
}

// ---------------------------------------------------------------------------

async function parallelSessions(broker: Broker, workspace: string): Promise<Map<number, number>> {
  const max = SESSIONS[SESSIONS.length - 1]!;
  log(`parallel sessions: opening ${max} sessions with echo`);
  const sessions: Session[] = [];
  try {
    for (let i = 0; i < max; i++) {
      want(broker, `par-${i}`, ["echo"]);
      sessions.push(await openSession(broker, `par-${i}`, workspace, ["echo"]));
    }
    const calls = sessions.map((s) => async () => checkReport(await s.callTool("echo", TINY), 2));
    for (const call of calls) for (let i = 0; i < 50; i++) await call();
    const runs = new Map<number, number[]>(SESSIONS.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      log(`parallel sessions: round ${round + 1}/${ROUNDS} (${WINDOW_MS} ms windows)`);
      const order = SESSIONS.map((_, i) => SESSIONS[(i + round) % SESSIONS.length]!);
      for (const n of order) runs.get(n)!.push(await closedLoop(calls.slice(0, n), 1, WINDOW_MS));
    }
    return new Map([...runs].map(([n, xs]) => [n, median(xs)]));
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
}

// ---------------------------------------------------------------------------

interface ExtensionFigures {
  readonly openMs: number[];
  readonly brokerRss: number[];
  readonly satRss: number[];
  readonly satPss: number[];
  readonly satPrivate: number[];
  readonly processes: number;
}

async function extensionsPerSession(
  broker: Broker,
  runTmp: string,
  workspace: string,
): Promise<Map<number, ExtensionFigures>> {
  const max = EXTENSIONS[EXTENSIONS.length - 1]!;
  log(`extensions per session: installing ${max} copies of bench/fixtures/echo-n`);
  const names: string[] = [];
  for (let i = 1; i <= max; i++) {
    const n = String(i).padStart(2, "0");
    const dir = join(runTmp, "ext", `echo-n-${n}`);
    copyExtension(join(REPO, "bench/fixtures/echo-n"), dir, (m) =>
      renamed(m, `echo-n-${n}`).replace(/^name = "echo_n"$/m, `name = "echo_n_${n}"`),
    );
    const index = join(dir, "index.ts");
    writeFileSync(index, readFileSync(index, "utf8").replace('const TOOL = "echo_n";', `const TOOL = "echo_n_${n}";`));
    names.push(await installApproved(broker, dir, false));
  }
  const out = new Map<number, ExtensionFigures>();
  for (const n of EXTENSIONS)
    out.set(n, { openMs: [], brokerRss: [], satRss: [], satPss: [], satPrivate: [], processes: 0 });
  for (let rep = 0; rep <= OPEN_REPS; rep++) {
    const order = rep === 0 ? [max] : EXTENSIONS.map((_, i) => EXTENSIONS[(i + rep) % EXTENSIONS.length]!);
    for (const n of order) {
      log(
        `extensions per session: ${rep === 0 ? "warm-up (discarded)" : `rep ${rep}/${OPEN_REPS}`}, ${n} extension(s)`,
      );
      const id = `ext-${n}-${rep}`;
      want(broker, id, names.slice(0, n));
      const t0 = process.hrtime.bigint();
      const session = await openSession(broker, id, workspace, names.slice(0, n));
      const took = Number(process.hrtime.bigint() - t0) / 1e6;
      try {
        checkReport(await session.callTool(`echo_n_${String(n).padStart(2, "0")}`, TINY), 2);
        await settle(300);
        const mem = totalMemory();
        if (rep > 0) {
          const f = out.get(n)!;
          f.openMs.push(took);
          f.brokerRss.push(mem.brokerRss);
          f.satRss.push(mem.satellites.rss);
          f.satPss.push(mem.satellites.pss);
          f.satPrivate.push(mem.satellites.private);
          out.set(n, { ...f, processes: mem.processes });
        }
      } finally {
        await session.close();
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

interface MemoryFigures {
  readonly freshPrivate: number;
  readonly freshRss: number;
  readonly usedPrivate: number;
  readonly usedRss: number;
  /** Per idle session (each with echo), over IDLE_SESSIONS of them. */
  readonly idle: {
    brokerRss: number;
    brokerHeap: number;
    satRss: number;
    satPss: number;
    satPrivate: number;
    processes: number;
  };
}

async function memory(broker: Broker, workspace: string): Promise<MemoryFigures> {
  log("memory: one satellite fresh and after 200 calls (100 tiny, 100 × 64 KiB), 1 s idle each");
  // A second echo satellite idles beside the measured one: with a lone deno, the pages of the deno
  // binary it maps would count as its private memory, though every further satellite shares them.
  want(broker, "mem-peer", ["echo"]);
  const peer = await openSession(broker, "mem-peer", workspace, ["echo"]);
  checkReport(await peer.callTool("echo", TINY), 2);
  const peerDeno = satelliteProcesses().filter((pid) => comm(pid) === "deno");
  want(broker, "mem", ["echo"]);
  const session = await openSession(broker, "mem", workspace, ["echo"]);
  let fresh: { priv: number; rss: number };
  let used: { priv: number; rss: number };
  try {
    const deno = () => {
      const pids = satelliteProcesses().filter((pid) => comm(pid) === "deno" && !peerDeno.includes(pid));
      if (pids.length !== 1) throw new Error(`expected one deno, found ${pids.length}`);
      return pids[0]!;
    };
    checkReport(await session.callTool("echo", TINY), 2);
    await settle(1000);
    fresh = { priv: privateKiB(deno()), rss: rssKiB(deno()) };
    for (let i = 0; i < 100; i++) {
      checkReport(await session.callTool("echo", TINY), 2);
      checkReport(await session.callTool("echo", BIG), 64 * 1024);
    }
    await settle(1000);
    used = { priv: privateKiB(deno()), rss: rssKiB(deno()) };
  } finally {
    await Promise.all([session.close(), peer.close()]);
  }

  log(`memory: ${IDLE_SESSIONS} idle sessions with echo, against none`);
  await settle(500);
  const heap0 = (gc(), process.memoryUsage().heapUsed);
  const before = totalMemory();
  const idle: Session[] = [];
  try {
    for (let i = 0; i < IDLE_SESSIONS; i++) {
      want(broker, `idle-${i}`, ["echo"]);
      const s = await openSession(broker, `idle-${i}`, workspace, ["echo"]);
      checkReport(await s.callTool("echo", TINY), 2);
      idle.push(s);
    }
    await settle(1000);
    const after = totalMemory();
    const heap1 = process.memoryUsage().heapUsed;
    const per = (x: number) => x / IDLE_SESSIONS;
    return {
      freshPrivate: fresh.priv,
      freshRss: fresh.rss,
      usedPrivate: used.priv,
      usedRss: used.rss,
      idle: {
        brokerRss: per(after.brokerRss - before.brokerRss),
        brokerHeap: per((heap1 - heap0) / 1024),
        satRss: per(after.satellites.rss - before.satellites.rss),
        satPss: per(after.satellites.pss - before.satellites.pss),
        satPrivate: per(after.satellites.private - before.satellites.private),
        processes: per(after.processes - before.processes),
      },
    };
  } finally {
    await Promise.all(idle.map((s) => s.close()));
  }
}

// ---------------------------------------------------------------------------

async function run(runTmp: string): Promise<void> {
  const started = process.hrtime.bigint();
  const loadStart = loadAverage();
  const home = join(runTmp, "home");
  const workspace = join(runTmp, "workspace");
  mkdirSync(workspace, { recursive: true });
  const broker = openBroker(home);
  let par: Map<number, number>;
  let ext: Map<number, ExtensionFigures>;
  let mem: MemoryFigures;
  try {
    await installApproved(broker, ECHO_DIR, false);
    par = await parallelSessions(broker, workspace);
    ext = await extensionsPerSession(broker, runTmp, workspace);
    mem = await memory(broker, workspace);
  } finally {
    await broker.close();
    await esbuild.stop();
  }

  const out = process.stdout;
  out.write(
    `\nTether scale bench — ${cpus().length} CPUs (nproc), node ${process.version}, bwrap ${findBwrap()}; the library (Session), real jail\n`,
  );
  out.write(
    `\n== Sessions in parallel (echo, tiny, one call in flight per session; median of ${ROUNDS} ${WINDOW_MS} ms windows)\n\n`,
  );
  const one = par.get(1)!;
  out.write(
    table(
      ["sessions", "calls/s (all sessions)", "× 1 session"],
      SESSIONS.map((n) => [String(n), `${fmt(par.get(n)!)}/s`, `${(par.get(n)! / one).toFixed(2)}×`]),
    ),
  );
  out.write(
    `\n\n== Extensions per session (copies of bench/fixtures/echo-n; medians of ${OPEN_REPS} opens each, after one discarded)\n\n`,
  );
  out.write(
    table(
      [
        "extensions",
        "session open ms",
        "satellite processes",
        "broker RSS",
        "satellites RSS (sum)",
        "satellites PSS (sum)",
        "satellites private",
        "broker + satellites RSS",
      ],
      EXTENSIONS.map((n) => {
        const f = ext.get(n)!;
        return [
          String(n),
          fmt(median(f.openMs)),
          String(f.processes),
          mib(median(f.brokerRss)),
          mib(median(f.satRss)),
          mib(median(f.satPss)),
          mib(median(f.satPrivate)),
          mib(median(f.brokerRss) + median(f.satRss)),
        ];
      }),
    ),
  );
  out.write(
    "\n\n(With one extension its deno is the only one running: the deno binary's pages count as its private memory. With more, they are shared.)",
  );
  out.write("\n\n== One satellite (the jailed deno of echo) and an idle session\n\n");
  out.write(
    table(
      ["measure", "value"],
      [
        [
          "jailed deno (another idles beside it), fresh: private (Private_Clean + Private_Dirty) / RSS",
          `${mib(mem.freshPrivate)} / ${mib(mem.freshRss)}`,
        ],
        [
          "jailed deno, after 200 calls (100 tiny, 100 × 64 KiB): private / RSS",
          `${mib(mem.usedPrivate)} / ${mib(mem.usedRss)}`,
        ],
        [`idle session (echo), per session over ${IDLE_SESSIONS}: satellite processes`, fmt(mem.idle.processes)],
        ["  satellites' private memory", mib(mem.idle.satPrivate)],
        ["  satellites' PSS (shared pages split between processes)", mib(mem.idle.satPss)],
        ["  satellites' RSS (shared pages counted in each)", mib(mem.idle.satRss)],
        [
          "  broker RSS growth / heap growth (after a full GC)",
          `${mib(mem.idle.brokerRss)} / ${mib(mem.idle.brokerHeap)}`,
        ],
      ],
    ),
  );
  out.write(
    `\n\n${new Date().toISOString().slice(0, 10)}; load average at start / end: ${loadStart} / ${loadAverage()}\n`,
  );
  warnLeftovers(runTmp, [/^home$/, /^workspace$/, /^ext$/]);
  warnStrays(["deno", "bwrap"]);
  out.write(`\nbench took ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s\n`);
}

runJailBench("tether-bench-scale-", run);
