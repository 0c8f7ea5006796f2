/**
 * `npx tsx bench/satellite-work.ts`: where a satellite's CPU per call goes, in
 * two parts (not in `make bench`: a diagnostic, as `bench/mcp-layer.ts` is).
 *
 * 1. **The jail, per call.** One warm tiny echo call at `SatelliteProcess.run`
 *    (no queue, no kernel), its satellite jailed as the broker jails it, jailed
 *    with no cgroup, and not jailed at all; the raw floor's peer beside them, and
 *    the same peer with its Node side busy `SPIN_US` µs (default 40) after each
 *    answer, as the broker is between an answer and the next call's frame. A
 *    fresh satellite for every block (a process keeps its placement on the CPUs,
 *    which moves a call's time as much as anything measured here), the variants
 *    alternating, `BLOCKS` blocks of `N` calls (defaults 8 and 2000), medians:
 *    wall, the broker's and the satellite's CPU, and the satellite's sleeps, per call.
 * 2. **The runtime's JavaScript, per call.** `bench/fixtures/satellite-work.ts`,
 *    bundled as an artifact is and run by the pinned Deno with a satellite's V8
 *    flags: each stage of one call (splitting the frame off, decoding and checking
 *    it, the invocation's records, the tool through `answer`, encoding the answer)
 *    in a loop with no socket, and the raw floor's Deno side the same way.
 *
 * Read together: what the first part shows above the floor, less what the second
 * shows of JavaScript, is the event loop's and the kernel's.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import type { InvocationRequest } from "../broker/base/invocation.js";
import type { CapHandler } from "../broker/base/capability.js";
import { ARTIFACT_BUILD_OPTIONS } from "../broker/install/bundle-core.js";
import { denoBinary } from "../broker/jail/deno-binary.js";
import { denoRunArgs } from "../broker/jail/sandbox.js";
import { jailSetup } from "../broker/jail/setup.js";
import { SatelliteProcess } from "../broker/satellite/process.js";
import type { SatelliteSpec } from "../broker/satellite/spec.js";
import { bundleToTemp, specFor, type Bundled } from "../tests/support/satellites.js";
import { FIXTURES, FloorPeer, bundleFloorEcho } from "./lib/floor.js";
import { cpuNs, findDeno, sleeps } from "./lib/procs.js";
import { loadAverage, log, runJailBench } from "./lib/run.js";
import { fmt, median, table } from "./lib/stats.js";

const N = Number(process.env.N ?? 2000);
const BLOCKS = Number(process.env.BLOCKS ?? 8);
const ARGS = '{"text":"hi"}';
const WARM_CALLS = 300;
/**
 * About what the broker's process layer spends per call above the floor's Node side, most of it between
 * an answer and the next frame: the floor driven so shows what that costs the Deno side.
 */
const SPIN_US = Number(process.env.SPIN_US ?? 40);

interface PerCall {
  readonly wallUs: number;
  readonly brokerCpuUs: number;
  readonly satelliteCpuUs: number;
  readonly sleeps: number;
}

/** One warm peer: its Deno's pid, one call, and how to stop it. */
interface Peer {
  readonly deno: number;
  readonly call: () => Promise<unknown>;
  readonly close: () => Promise<void>;
}

async function timed(peer: Peer): Promise<PerCall> {
  for (let i = 0; i < WARM_CALLS; i++) await peer.call();
  const cpu0 = cpuNs(peer.deno);
  const slept0 = sleeps(peer.deno);
  const broker0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await peer.call();
  const wall = Number(process.hrtime.bigint() - t0) / 1000;
  const broker = process.cpuUsage(broker0);
  return {
    wallUs: wall / N,
    brokerCpuUs: (broker.user + broker.system) / N,
    satelliteCpuUs: (cpuNs(peer.deno) - cpu0) / 1000 / N,
    sleeps: (sleeps(peer.deno) - slept0) / N,
  };
}

const refuse: CapHandler = async () => ({ ok: false, error: { code: "denied", msg: "not in this bench" } });
const request: InvocationRequest<"tool"> = { kind: "tool", name: "echo", args: ARGS, strand: "", deadlineMs: 30_000 };

async function satellitePeer(echo: Bundled, spec: Partial<SatelliteSpec>): Promise<Peer> {
  const sat = await SatelliteProcess.boot(specFor(echo, spec));
  const deno = sat.pid === undefined ? null : findDeno(sat.pid);
  if (deno === null) throw new Error("no deno process under the satellite");
  return {
    deno,
    call: async () => {
      const outcome = await sat.run(request, refuse).outcome;
      if (!outcome.ok) throw new Error(`echo failed: ${outcome.error.code}: ${outcome.error.msg}`);
    },
    close: () => sat.close(),
  };
}

/** Busy for `us` µs on this thread. */
function spin(us: number): void {
  const end = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < end) {
    // the broker's work between an answer and the next frame, stood in for
  }
}

/** The raw floor's peer; its Node side busy `afterAnswerUs` between an answer and the next request. */
async function floorPeer(script: string, afterAnswerUs = 0): Promise<Peer> {
  const { peer } = await FloorPeer.boot(script);
  const call =
    afterAnswerUs === 0
      ? () => peer.call(ARGS)
      : async () => {
          await peer.call(ARGS);
          spin(afterAnswerUs);
        };
  return { deno: peer.pid, call, close: () => peer.close() };
}

async function jailPerCall(echo: Bundled, floorScript: string): Promise<void> {
  const variants: Record<string, () => Promise<Peer>> = {
    "jailed (bwrap, cgroup, seccomp, launcher)": () => satellitePeer(echo, { sandbox: "bwrap" }),
    "jailed, no cgroup": () => satellitePeer(echo, { sandbox: "bwrap", jail: jailSetup({ cgroup: "none" }) }),
    "not jailed (sandbox none)": () => satellitePeer(echo, { sandbox: "none" }),
    "raw floor's peer (no runtime, no broker)": () => floorPeer(floorScript),
    [`raw floor's peer, its Node side busy ${SPIN_US} µs after each answer`]: () => floorPeer(floorScript, SPIN_US),
  };
  const names = Object.keys(variants);
  const runs = new Map<string, PerCall[]>(names.map((name) => [name, []]));
  log(`the jail per call: ${BLOCKS} blocks of ${N} calls per variant, a fresh process each block`);
  for (let block = 0; block < BLOCKS; block++) {
    for (const name of block % 2 === 0 ? names : [...names].reverse()) {
      const peer = await variants[name]!();
      try {
        runs.get(name)!.push(await timed(peer));
      } finally {
        await peer.close();
      }
    }
  }
  const of = (name: string, field: keyof PerCall) => fmt(median(runs.get(name)!.map((r) => r[field])));
  console.log("\n== 1. The jail, per call: one warm tiny echo call at SatelliteProcess.run (medians of blocks)\n");
  console.log(
    table(
      ["variant", "wall µs", "broker CPU µs", "satellite CPU µs", "satellite sleeps"],
      names.map((name) => [
        name,
        of(name, "wallUs"),
        of(name, "brokerCpuUs"),
        of(name, "satelliteCpuUs"),
        of(name, "sleeps"),
      ]),
    ),
  );
}

/** Runs the fixture under the pinned Deno with a satellite's flags; its JSON lines, one a round. */
async function runtimeWork(): Promise<void> {
  const built = await esbuild.build({
    ...ARTIFACT_BUILD_OPTIONS,
    entryPoints: [join(FIXTURES, "satellite-work.ts")],
  });
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-work-"));
  try {
    const script = join(dir, "satellite-work.js");
    writeFileSync(script, built.outputFiles[0]!.text);
    // A satellite's flags (its heap and young generation); the socket arguments name nothing it opens.
    const args = denoRunArgs(script, join(dir, "unused.sock"), 64);
    log("the runtime's JavaScript per call: 5 rounds of 100,000 calls per stage, under Deno");
    const lines = await new Promise<string>((resolveOut, reject) => {
      const child = spawn(denoBinary(), [...args.slice(0, -1), "100000", "5"], {
        env: { HOME: dir, DENO_DIR: join(dir, "deno"), NO_COLOR: "1", PATH: "/nonexistent" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      child.stderr.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolveOut(out) : reject(new Error(`deno exited ${code}: ${err}`))));
    });
    const rounds = lines
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, number>);
    const stages = Object.keys(rounds[0] ?? {});
    console.log("\n== 2. The runtime's JavaScript per call, under Deno with no socket (medians of 5 rounds)\n");
    console.log(
      table(
        ["stage", "µs per call"],
        stages.map((stage) => [stage, fmt(median(rounds.map((r) => r[stage]!)))]),
      ),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

runJailBench("tether-bench-work-", async () => {
  const load = loadAverage();
  const echo = await bundleToTemp("manifests/echo");
  const floor = await bundleFloorEcho();
  try {
    await jailPerCall(echo, floor.script);
    await runtimeWork();
  } finally {
    echo.cleanup();
    floor.cleanup();
  }
  console.log(`\nload average at start / end: ${load} / ${loadAverage()}`);
});
