/**
 * `make bench`: what a tool call, a cold boot and an idle satellite cost
 * through the broker, against the floor of raw Node ⇄ Deno msgpack.
 *
 * 1. Warm calls: latency (sequential) and calls/s (concurrent) through a
 *    SatelliteSlot over the bundled `echo` extension in the real bwrap jail,
 *    against bench/fixtures/floor-echo.js (plain Deno, same msgpackr, same
 *    framing, same bytes each way). Tiny payload and 64 KiB each way.
 * 2. Cold boot to a valid hello: broker with sandbox "bwrap", broker with
 *    sandbox "none", and bench/fixtures/floor-boot.js (trivial raw `deno run`).
 * 3. Idle RSS of the satellite's Deno process (the grandchild of the bwrap
 *    pid the broker holds).
 *
 * Knobs (environment): BENCH_SCALE (default 1) multiplies sample counts and
 * windows; BENCH_ONLY=calls|boot|rss runs one section (for profiling).
 * Floor and broker runs are interleaved in rounds so machine noise hits both.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import * as esbuild from "esbuild";
import { denoBinary } from "../broker/jail/deno-binary.js";
import { findBwrap } from "../broker/jail/sandbox.js";
import { SatelliteProcess } from "../broker/satellite/process.js";
import type { InvocationOutcome } from "../broker/base/outcome.js";
import type { InvocationRequest } from "../broker/base/invocation.js";
import type { SatelliteSlot } from "../broker/satellite/slot.js";
import { bundleToTemp, slotFor, specFor, type Bundled } from "../tests/support/satellites.js";
import { FLOOR_BOOT_SCRIPT, FloorPeer, bundleFloorEcho } from "./lib/floor.js";
import { childrenOf, comm, cpuNs, descendants, findDeno, parentOf, rssKiB, statusKiB } from "./lib/procs.js";
import { closedLoop, sequential, type Call } from "./lib/loop.js";
import { fmt, median, ms, summarise, table, type Latency } from "./lib/stats.js";

const SCALE = Number(process.env.BENCH_SCALE ?? "1") || 1;
const ONLY = process.env.BENCH_ONLY ?? "";
const ROUNDS = 5;
const WARMUP = 200;
const LAT_SAMPLES = { tiny: Math.round(1500 * SCALE), big: Math.round(450 * SCALE) }; // per side, over all rounds
const TPUT_WINDOW_MS = Math.round(600 * SCALE); // per configuration per round
const CONCURRENCY = 4; // calls in flight for the calls/s comparison
const PIPELINE_DEPTH = 16;
const BOOTS = Math.max(5, Math.round(15 * SCALE)); // per kind, after one discarded warm-up boot

const TARGET = { p50: 1.3, callsPerSec: 0.8, boot: 1.3, rssMiB: 40 } as const;

interface Payload {
  readonly label: string;
  /** JSON text the echo tool receives; the floor sends the same string. */
  readonly args: string;
  readonly textBytes: number;
}

const payloads: Record<"tiny" | "big", Payload> = {
  tiny: { label: 'tiny ("hi")', args: JSON.stringify({ text: "hi" }), textBytes: 2 },
  big: { label: "64 KiB each way", args: JSON.stringify({ text: "x".repeat(64 * 1024) }), textBytes: 64 * 1024 },
};

function log(msg: string): void {
  process.stderr.write(`bench: ${msg}\n`);
}

function request(p: Payload): InvocationRequest<"tool"> {
  return { kind: "tool", name: "echo", args: p.args, strand: "bench", deadlineMs: 5000 };
}

function checkBroker(outcome: InvocationOutcome<"tool">, p: Payload): void {
  if (!outcome.ok) throw new Error(`broker call failed: ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content[0];
  const text = block?.type === "text" ? block.text : undefined;
  if (text?.length !== p.textBytes)
    throw new Error(`broker echo answered ${text?.length} characters, not ${p.textBytes}`);
}

function checkFloor(reply: unknown, p: Payload): void {
  const text = (reply as { value?: { content?: { text?: string }[] } }).value?.content?.[0]?.text;
  if (text !== p.args) throw new Error("floor echo answered something else");
}

function brokerCall(slot: SatelliteSlot, p: Payload): Call {
  const req = request(p);
  return async () => {
    const outcome = await slot.invoke(req);
    if (!outcome.ok) throw new Error(`broker call failed: ${outcome.error.code}: ${outcome.error.msg}`);
  };
}

function floorCall(peer: FloorPeer, p: Payload): Call {
  return async () => {
    await peer.call(p.args);
  };
}

function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}×`;
}

function verdict(ok: boolean): string {
  return ok ? "PASS" : "MISS";
}

// ---------------------------------------------------------------------------

/** CPU µs per call on each side, from the sequential latency runs. */
interface CpuPerCall {
  readonly node: number;
  readonly deno: number;
}

interface CallFigures {
  readonly lat: Record<"tiny" | "big", { floor: Latency; broker: Latency }>;
  readonly cpu: Record<"tiny" | "big", { floor: CpuPerCall; broker: CpuPerCall }>;
  readonly tput: Record<"tiny" | "big", Record<string, number>>;
}

async function measureCalls(echo: Bundled, floorScript: string): Promise<CallFigures> {
  log(`warm calls: booting ${CONCURRENCY} jailed echo satellites and ${CONCURRENCY} floor peers`);
  const slots = Array.from({ length: CONCURRENCY }, () => slotFor(echo));
  const peers: FloorPeer[] = [];
  try {
    for (const slot of slots) checkBroker(await slot.invoke(request(payloads.tiny)), payloads.tiny);
    for (let i = 0; i < CONCURRENCY; i++) peers.push((await FloorPeer.boot(floorScript)).peer);
    const slot0 = slots[0]!;
    const peer0 = peers[0]!;
    for (const p of Object.values(payloads)) {
      checkBroker(await slot0.invoke(request(p)), p);
      checkFloor(await peer0.call(p.args), p);
    }

    const lat = {
      tiny: { floor: [] as bigint[], broker: [] as bigint[] },
      big: { floor: [] as bigint[], broker: [] as bigint[] },
    };
    const denoPid = { floor: peer0.pid, broker: findDeno(slot0.process!.pid!) ?? Number.NaN };
    const cpuSum = {
      tiny: { floor: { node: 0, deno: 0 }, broker: { node: 0, deno: 0 } },
      big: { floor: { node: 0, deno: 0 }, broker: { node: 0, deno: 0 } },
    };
    /** Runs `n` sequential calls, keeping their latencies and the CPU both processes spent on them. */
    const timed = async (key: "tiny" | "big", side: "floor" | "broker", call: Call, n: number) => {
      const node0 = process.cpuUsage();
      const deno0 = cpuNs(denoPid[side]);
      lat[key][side].push(...(await sequential(call, n)));
      const node = process.cpuUsage(node0);
      cpuSum[key][side].node += node.user + node.system;
      cpuSum[key][side].deno += (cpuNs(denoPid[side]) - deno0) / 1000;
    };
    const tputRuns: Record<"tiny" | "big", Record<string, number[]>> = { tiny: {}, big: {} };
    const addTput = (k: "tiny" | "big", name: string, v: number) => (tputRuns[k][name] ??= []).push(v);

    for (let round = 0; round < ROUNDS; round++) {
      for (const key of ["tiny", "big"] as const) {
        const p = payloads[key];
        const n = Math.ceil(LAT_SAMPLES[key] / ROUNDS);
        const warm = round === 0 ? WARMUP : Math.ceil(WARMUP / 4);
        log(`round ${round + 1}/${ROUNDS}, ${p.label}: latency (${n} sequential calls per side)`);
        await sequential(floorCall(peer0, p), warm);
        await timed(key, "floor", floorCall(peer0, p), n);
        await sequential(brokerCall(slot0, p), warm);
        await timed(key, "broker", brokerCall(slot0, p), n);

        log(`round ${round + 1}/${ROUNDS}, ${p.label}: calls/s (${TPUT_WINDOW_MS} ms windows)`);
        addTput(key, "floor 1 peer, 1 in flight", await closedLoop([floorCall(peer0, p)], 1, TPUT_WINDOW_MS));
        addTput(key, "broker 1 slot, 1 in flight", await closedLoop([brokerCall(slot0, p)], 1, TPUT_WINDOW_MS));
        addTput(
          key,
          `floor ${CONCURRENCY} peers, 1 in flight each`,
          await closedLoop(
            peers.map((peer) => floorCall(peer, p)),
            1,
            TPUT_WINDOW_MS,
          ),
        );
        addTput(
          key,
          `broker ${CONCURRENCY} slots, 1 in flight each`,
          await closedLoop(
            slots.map((slot) => brokerCall(slot, p)),
            1,
            TPUT_WINDOW_MS,
          ),
        );
        addTput(
          key,
          `floor 1 peer, ${PIPELINE_DEPTH} pipelined`,
          await closedLoop([floorCall(peer0, p)], PIPELINE_DEPTH, TPUT_WINDOW_MS),
        );
        addTput(
          key,
          `broker 1 slot, ${PIPELINE_DEPTH} queued`,
          await closedLoop([brokerCall(slot0, p)], PIPELINE_DEPTH, TPUT_WINDOW_MS),
        );
      }
    }
    const med = (runs: Record<string, number[]>) =>
      Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
    return {
      lat: {
        tiny: { floor: summarise(lat.tiny.floor), broker: summarise(lat.tiny.broker) },
        big: { floor: summarise(lat.big.floor), broker: summarise(lat.big.broker) },
      },
      cpu: Object.fromEntries(
        (["tiny", "big"] as const).map((key) => {
          const per = (side: "floor" | "broker") => ({
            node: cpuSum[key][side].node / lat[key][side].length,
            deno: cpuSum[key][side].deno / lat[key][side].length,
          });
          return [key, { floor: per("floor"), broker: per("broker") }];
        }),
      ) as CallFigures["cpu"],
      tput: { tiny: med(tputRuns.tiny), big: med(tputRuns.big) },
    };
  } finally {
    await Promise.all([...slots.map((s) => s.destroy("the bench is done")), ...peers.map((p) => p.close())]);
  }
}

// ---------------------------------------------------------------------------

interface BootFigures {
  readonly bwrap: number[];
  readonly none: number[];
  /** The same artifact spawned raw (child_process, no execa, no broker checks, no bwrap). */
  readonly rawArtifact: number[];
  readonly floor: number[];
}

async function measureBoots(echo: Bundled): Promise<BootFigures> {
  const out: BootFigures = { bwrap: [], none: [], rawArtifact: [], floor: [] };
  const bootBroker = async (sandbox: "bwrap" | "none"): Promise<number> => {
    const t0 = process.hrtime.bigint();
    const sat = await SatelliteProcess.boot(specFor(echo, { sandbox }));
    const took = ms(process.hrtime.bigint() - t0);
    await sat.close();
    return took;
  };
  const bootRaw = async (script: string, stdin?: string): Promise<number> => {
    const { peer, bootNs } = await FloorPeer.boot(script, { stdin });
    await peer.close();
    return ms(bootNs);
  };
  const bootFloor = () => bootRaw(FLOOR_BOOT_SCRIPT);
  const bootArtifact = () => bootRaw(echo.artifact, "bench-boot-token\n");
  log(`cold boot: ${BOOTS} boots per kind (+1 discarded), interleaved`);
  await bootBroker("bwrap");
  await bootBroker("none");
  await bootArtifact();
  await bootFloor();
  for (let i = 0; i < BOOTS; i++) {
    out.bwrap.push(await bootBroker("bwrap"));
    out.none.push(await bootBroker("none"));
    out.rawArtifact.push(await bootArtifact());
    out.floor.push(await bootFloor());
  }
  return out;
}

// ---------------------------------------------------------------------------

interface RssFigures {
  readonly freshBwrapMiB: number;
  readonly usedBwrapMiB: number;
  /** Of usedBwrapMiB: private anonymous memory, and file-backed pages (mostly the deno binary, shared by all satellites). */
  readonly usedBwrapAnonMiB: number;
  readonly usedBwrapFileMiB: number;
  readonly usedNoneMiB: number;
  readonly floorMiB: number;
  readonly trivialMiB: number;
  readonly bwrapChain: string;
}

const settle = (msDelay: number) => new Promise((r) => setTimeout(r, msDelay));

async function measureRss(echo: Bundled, floorScript: string): Promise<RssFigures> {
  log("idle RSS: fresh and after 200 mixed calls (100 tiny, 100 of 64 KiB), 1 s idle");
  const slots = { bwrap: slotFor(echo, { sandbox: "bwrap" }), none: slotFor(echo, { sandbox: "none" }) };
  let peer: FloorPeer | null = null;
  let trivial: FloorPeer | null = null;
  try {
    const denoOf = (slot: SatelliteSlot): number => {
      const pid = slot.process?.pid;
      if (pid === undefined) throw new Error("the slot has no process");
      const deno = findDeno(pid);
      if (deno === null) throw new Error(`no deno process under pid ${pid}`);
      return deno;
    };
    checkBroker(await slots.bwrap.invoke(request(payloads.tiny)), payloads.tiny);
    await settle(1000);
    const bwrapPid = slots.bwrap.process!.pid!;
    const deno = denoOf(slots.bwrap);
    const freshBwrapMiB = rssKiB(deno) / 1024;
    const chain = [bwrapPid, ...findChain(bwrapPid, deno)];
    const bwrapChain = chain.map((p) => `${comm(p)}(${fmt(rssKiB(p) / 1024)} MiB)`).join(" → ");

    peer = (await FloorPeer.boot(floorScript)).peer;
    trivial = (await FloorPeer.boot(FLOOR_BOOT_SCRIPT)).peer;
    for (let i = 0; i < 100; i++) {
      for (const p of Object.values(payloads)) {
        await slots.bwrap.invoke(request(p));
        await slots.none.invoke(request(p));
        await peer.call(p.args);
      }
    }
    await settle(1000);
    const used = denoOf(slots.bwrap);
    return {
      freshBwrapMiB,
      usedBwrapMiB: rssKiB(used) / 1024,
      usedBwrapAnonMiB: statusKiB(used, "RssAnon") / 1024,
      usedBwrapFileMiB: statusKiB(used, "RssFile") / 1024,
      usedNoneMiB: rssKiB(denoOf(slots.none)) / 1024,
      floorMiB: rssKiB(peer.pid) / 1024,
      trivialMiB: rssKiB(trivial.pid) / 1024,
      bwrapChain,
    };
  } finally {
    await Promise.all([
      slots.bwrap.destroy("the bench is done"),
      slots.none.destroy("the bench is done"),
      peer?.close(),
      trivial?.close(),
    ]);
  }
}

/** The pids from `from` (exclusive) down to `to` (inclusive). */
function findChain(from: number, to: number): number[] {
  const chain: number[] = [];
  for (let p = to; p !== from && p > 1; p = parentOf(p)) chain.unshift(p);
  return chain;
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = process.hrtime.bigint();
  if (findBwrap() === null) throw new Error("bwrap is not installed; the bench measures the real jail");
  // Every temp file of this run (artifacts, satellite socket folders, floor folders) goes under one
  // private folder, so the cleanup check below is exact even while other runs share /tmp.
  const systemTmp = tmpdir();
  const runTmp = mkdtempSync(join(systemTmp, "tether-bench-run-"));
  process.env.TMPDIR = runTmp;
  try {
    await run(started, runTmp);
  } finally {
    process.env.TMPDIR = systemTmp;
    rmSync(runTmp, { recursive: true, force: true });
  }
}

async function run(started: bigint, runTmp: string): Promise<void> {
  const denoVersion = execFileSync(denoBinary(), ["--version"], { encoding: "utf8" }).split("\n")[0];
  log(`${cpus().length} CPUs, node ${process.version}, ${denoVersion}`);

  const echo = await bundleToTemp("manifests/echo");
  const floor = await bundleFloorEcho();
  let calls: CallFigures | null = null;
  let boots: BootFigures | null = null;
  let rss: RssFigures | null = null;
  try {
    if (ONLY === "" || ONLY === "calls") calls = await measureCalls(echo, floor.script);
    if (ONLY === "" || ONLY === "boot") boots = await measureBoots(echo);
    if (ONLY === "" || ONLY === "rss") rss = await measureRss(echo, floor.script);
  } finally {
    echo.cleanup();
    floor.cleanup();
    await esbuild.stop();
  }

  const rows: string[][] = [];
  const us = (x: number) => `${fmt(x)} µs`;
  if (calls !== null) {
    for (const key of ["tiny", "big"] as const) {
      const { floor: f, broker: b } = calls.lat[key];
      const label = payloads[key].label;
      rows.push([
        `warm call p50, ${label}`,
        us(b.p50),
        us(f.p50),
        ratio(b.p50, f.p50),
        `≤ ${TARGET.p50}×`,
        verdict(b.p50 <= TARGET.p50 * f.p50),
      ]);
      rows.push([`warm call p99, ${label}`, us(b.p99), us(f.p99), ratio(b.p99, f.p99), "", ""]);
      const c = calls.cpu[key];
      rows.push([
        `  CPU per call, Node side, ${label}`,
        us(c.broker.node),
        us(c.floor.node),
        ratio(c.broker.node, c.floor.node),
        "",
        "",
      ]);
      rows.push([
        `  CPU per call, Deno side, ${label}`,
        us(c.broker.deno),
        us(c.floor.deno),
        ratio(c.broker.deno, c.floor.deno),
        "",
        "",
      ]);
    }
    for (const key of ["tiny", "big"] as const) {
      const t = calls.tput[key];
      const label = payloads[key].label;
      const pairs: [string, string, boolean][] = [
        ["broker 1 slot, 1 in flight", "floor 1 peer, 1 in flight", false],
        [`broker ${CONCURRENCY} slots, 1 in flight each`, `floor ${CONCURRENCY} peers, 1 in flight each`, true],
        [`broker 1 slot, ${PIPELINE_DEPTH} queued`, `floor 1 peer, ${PIPELINE_DEPTH} pipelined`, false],
      ];
      for (const [b, f, target] of pairs) {
        const bv = t[b]!;
        const fv = t[f]!;
        rows.push([
          `calls/s, ${label}: ${b} vs ${f.replace("floor ", "")}`,
          `${fmt(bv)}/s`,
          `${fmt(fv)}/s`,
          ratio(bv, fv),
          target ? `≥ ${TARGET.callsPerSec}×` : "",
          target ? verdict(bv >= TARGET.callsPerSec * fv) : "",
        ]);
      }
    }
  }
  if (boots !== null) {
    const bw = median(boots.bwrap);
    const none = median(boots.none);
    const fl = median(boots.floor);
    const msCell = (x: number) => `${fmt(x)} ms`;
    rows.push([
      `cold boot (median of ${BOOTS}), broker bwrap vs broker none`,
      msCell(bw),
      msCell(none),
      ratio(bw, none),
      `≤ ${TARGET.boot}×`,
      verdict(bw <= TARGET.boot * none),
    ]);
    rows.push([
      `cold boot, broker bwrap vs raw deno run (floor-boot.js)`,
      msCell(bw),
      msCell(fl),
      ratio(bw, fl),
      "",
      "",
    ]);
    rows.push([
      `cold boot, broker none vs raw deno run (floor-boot.js)`,
      msCell(none),
      msCell(fl),
      ratio(none, fl),
      "",
      "",
    ]);
    const raw = median(boots.rawArtifact);
    rows.push([
      `cold boot, raw deno run of the echo artifact vs floor-boot.js`,
      msCell(raw),
      msCell(fl),
      ratio(raw, fl),
      "",
      "",
    ]);
  }
  if (rss !== null) {
    const mib = (x: number) => `${fmt(x)} MiB`;
    rows.push([
      `idle RSS, jailed deno after 200 calls (floor: floor-echo deno)`,
      mib(rss.usedBwrapMiB),
      mib(rss.floorMiB),
      ratio(rss.usedBwrapMiB, rss.floorMiB),
      `≤ ${TARGET.rssMiB} MiB`,
      verdict(rss.usedBwrapMiB <= TARGET.rssMiB),
    ]);
    rows.push([
      `  of which private anonymous / file-backed (shared binary)`,
      `${fmt(rss.usedBwrapAnonMiB)} / ${fmt(rss.usedBwrapFileMiB)} MiB`,
      "",
      "",
      "",
      "",
    ]);
    rows.push([
      `idle RSS, jailed deno freshly booted`,
      mib(rss.freshBwrapMiB),
      "",
      "",
      `≤ ${TARGET.rssMiB} MiB`,
      verdict(rss.freshBwrapMiB <= TARGET.rssMiB),
    ]);
    rows.push([`idle RSS, unjailed (sandbox none) deno after 200 calls`, mib(rss.usedNoneMiB), "", "", "", ""]);
    rows.push([
      `idle RSS, jailed deno fresh vs raw deno run (floor-boot.js)`,
      mib(rss.freshBwrapMiB),
      mib(rss.trivialMiB),
      ratio(rss.freshBwrapMiB, rss.trivialMiB),
      "",
      "",
    ]);
  }

  const out = process.stdout;
  out.write(
    `\nTether invoke bench — ${cpus().length} CPUs (nproc), node ${process.version}, ${denoVersion}, bwrap ${findBwrap()}\n`,
  );
  out.write(
    `broker = SatelliteSlot over bundled manifests/echo (tool 'echo'); floor = raw Node⇄Deno msgpack (bench/fixtures)\n`,
  );
  if (calls !== null) {
    const l = calls.lat;
    out.write(
      `latency samples per side: tiny ${l.tiny.broker.n}, 64 KiB ${l.big.broker.n} (${ROUNDS} interleaved rounds); calls/s: median of ${ROUNDS} ${TPUT_WINDOW_MS} ms windows\n`,
    );
  }
  out.write("\n");
  out.write(table(["measure", "broker", "floor", "ratio", "target", "result"], rows));
  out.write("\n");
  if (rss !== null) out.write(`\nbwrap process chain held by the broker: ${rss.bwrapChain}\n`);

  const leftovers = readdirSync(runTmp);
  if (leftovers.length > 0)
    out.write(`\nWARNING: temp files were left behind (removed on exit): ${leftovers.join(", ")}\n`);
  // Every satellite and floor process was closed and awaited: no deno or bwrap of ours may still run.
  // (esbuild's service processes, ours and tsx's own, are not counted; they exit with us.)
  const strays = childrenOf(process.pid)
    .flatMap((pid) => descendants(pid))
    .filter((pid) => ["deno", "bwrap"].includes(comm(pid)))
    .map((pid) => `${comm(pid)}(${pid})`);
  if (strays.length > 0) out.write(`\nWARNING: processes still running: ${strays.join(", ")}\n`);
  out.write(`\nbench took ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
