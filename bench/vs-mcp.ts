/**
 * `make bench` (vs-mcp): Tether's call path against the MCP SDK's, and against
 * the floors they stand on. One run, interleaved in rounds so machine noise
 * hits every variant alike; the echo tool with `{"text":"hi"}` and with a
 * 64 KiB string each way:
 *
 *  floor       raw Node ⇄ Deno msgpack over a Unix socket (bench/lib/floor.ts,
 *              bench/fixtures/floor-echo.js; as bench/invoke.ts, no jail);
 *  sdk         an MCP SDK `McpServer` in a Node child over stdio
 *              (bench/fixtures/mcp-echo-server.js), driven by the SDK `Client`;
 *  lib         `Session.callTool` on a session with only echo active;
 *  hook        the same with bench/fixtures/nop-guard's tool_call hook;
 *  nomatch     the same with a tool_call hook whose matcher skips echo (only
 *              when this checkout's manifest has hook matchers);
 *  pool        `Session.callTool` on echo with `[limits] concurrency = 8` (one satellite, 8 calls open)
 *              (only when this checkout's manifest has it);
 *  serve       `tether serve`'s JSON-RPC over a WebSocket, in this process
 *              (the `ws` client on its Unix socket, `tool.call`);
 *  mcp         `tether mcp --session` as a child (node bin/tether.js), driven
 *              by the SDK `Client` over stdio;
 *  ws floor    a bare `ws` server on a Unix socket in this process that sends
 *              each message back (serve's transport floor);
 *  stdio floor the SDK `Client` against a Node child answering JSON-RPC
 *              without the SDK (bench/fixtures/jsonrpc-echo-server.js;
 *              `tether mcp`'s transport floor).
 *
 * Then cold starts (spawn/open → first answer), the targets table, and the
 * plot docs/perf/calls-vs-concurrency.svg. BENCH_SCALE shrinks sample counts.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import type { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { denoBinary } from "../broker/jail/deno-binary.js";
import { findBwrap } from "../broker/jail/sandbox.js";
import { ServeServer } from "../broker/tether-serve/serve-server.js";
import type { Session } from "../broker/sessions/session.js";
import { FloorPeer, bundleFloorEcho } from "./lib/floor.js";
import {
  ECHO_DIR,
  HAS_CONCURRENCY,
  HOOK_MATCH,
  NOP_GUARD_DIR,
  REPO,
  checkReport,
  copyExtension,
  installApproved,
  openBroker,
  openSession,
  renamed,
  want,
  withLimit,
} from "./lib/home.js";
import { closedLoop, sequential } from "./lib/loop.js";
import { mcpEcho, startMcp, type McpPeer } from "./lib/mcp-client.js";
import { RpcClient, echoWsServer } from "./lib/rpc-ws.js";
import { loadAverage, log, runJailBench, warnLeftovers, warnStrays } from "./lib/run.js";
import { fmt, median, summarise, table, type Latency } from "./lib/stats.js";
import { lineChart } from "./lib/svg.js";

const SCALE = Number(process.env.BENCH_SCALE ?? "1") || 1;
const ROUNDS = 3;
const LAT_SAMPLES = { tiny: Math.max(30, Math.round(600 * SCALE)), big: Math.max(15, Math.round(150 * SCALE)) }; // per variant, over all rounds
// Before the rounds, every variant makes this many calls of each size: the floor's Deno needed ~300
// calls of 64 KiB before its p50 settled (2.5 ms → 0.3 ms), and every variant gets the same.
const WARMUP = Math.max(50, Math.round(300 * SCALE));
const WARMUP_ROUND = 25; // again before each variant's samples in each round
const WINDOW_MS = Math.max(100, Math.round(300 * SCALE)); // per calls/s figure per round (after a fifth of it as warm-up)
const COLD_REPS = Math.max(3, Math.round(4 * SCALE)); // after one discarded rep
const DEPTHS = [1, 2, 4, 8] as const;
const IN_FLIGHT = 8;
const SVG_PATH = join(REPO, "docs/perf/calls-vs-concurrency.svg");

const TARGET = {
  vsSdkP50: 0.5,
  vsSdkSeq: 2,
  vsFloorP50: 1.5,
  vsSdkInFlight: 1.2,
  hook: 1.5,
  noMatch: 1.05,
  overTransport: 1.3,
} as const;

type Size = "tiny" | "big";

interface Payload {
  readonly args: { readonly text: string };
  /** The same arguments as JSON text (the library takes text). */
  readonly json: string;
  readonly textBytes: number;
}

const payloads: Record<Size, Payload> = {
  tiny: { args: { text: "hi" }, json: JSON.stringify({ text: "hi" }), textBytes: 2 },
  big: {
    args: { text: "x".repeat(64 * 1024) },
    json: JSON.stringify({ text: "x".repeat(64 * 1024) }),
    textBytes: 64 * 1024,
  },
};

type Key =
  | "floor"
  | "floor2"
  | "sdk"
  | "lib"
  | "hook"
  | "nomatch"
  | "pool"
  | "serve"
  | "mcp"
  | "wsFloor"
  | "stdioFloor";

const LABELS: Record<Key, string> = {
  floor: "raw floor (Node⇄Deno msgpack)",
  floor2: "raw floor, 2 peers in turn (a hooked call's)",
  sdk: "MCP SDK (McpServer, stdio child)",
  lib: "Tether Session.callTool",
  hook: "Tether + 1 matching tool_call hook",
  nomatch: "Tether + 1 non-matching hook",
  pool: "Tether, echo with concurrency = 8 (one satellite)",
  serve: "tether serve (JSON-RPC/WebSocket)",
  mcp: "tether mcp (stdio child)",
  wsFloor: "ws floor (bare ws echo)",
  stdioFloor: "stdio floor (SDK Client, bare JSON-RPC child)",
};

interface Variant {
  readonly key: Key;
  readonly call: (size: Size) => Promise<void>;
  /** In-flight depths its tiny calls/s is measured at (none: latency only). */
  readonly depths: readonly number[];
  /** Its 64 KiB calls/s (one in flight) is measured too. */
  readonly bigTput: boolean;
}

interface Figures {
  readonly lat: Map<Key, Record<Size, Latency>>;
  /** Median calls/s over the rounds, tiny, by depth. */
  readonly tput: Map<Key, Map<number, number>>;
  readonly bigTput: Map<Key, number>;
}

// ---------------------------------------------------------------------------

/** What the warm part runs on, and how to stop all of it. */
interface Setup {
  readonly variants: Variant[];
  readonly notes: string[];
  readonly mcpPeers: McpPeer[];
  readonly close: () => Promise<void>;
}

async function setUp(runTmp: string, home: string, workspace: string, floorScript: string): Promise<Setup> {
  const closers: (() => Promise<unknown>)[] = [];
  const notes: string[] = [
    COMPILED
      ? "the library ran compiled (dist/bench/vs-mcp.js), as an installed package does"
      : "the library ran through tsx, which costs its calls more: `make bench` runs dist/bench/vs-mcp.js",
    FROM_DIST
      ? "tether mcp ran the compiled dist/ (TETHER_FROM_DIST=1), as an installed package does"
      : "tether mcp ran the TypeScript sources through tsx: `make bench` runs the compiled dist/, as installed",
  ];
  const variants: Variant[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch((err: unknown) => log(`closing: ${(err as Error).message}`));
  };
  try {
    // Raw floor.
    const { peer } = await FloorPeer.boot(floorScript);
    closers.push(() => peer.close());
    const echoOf = (p: FloorPeer) => async (size: Size) => {
      const reply = (await p.call(payloads[size].json)) as { value?: { content?: { text?: string }[] } };
      if (reply.value?.content?.[0]?.text?.length !== payloads[size].json.length)
        throw new Error("floor echo answered something else");
    };
    const floorCall = echoOf(peer);
    variants.push({ key: "floor", depths: DEPTHS, bigTput: true, call: floorCall });
    // What a call with one hook is at the least: a round trip to the hook's process, then one to the tool's
    // (a second peer: three processes take turns on the CPUs, as a hooked call's do).
    const { peer: hookPeer } = await FloorPeer.boot(floorScript);
    closers.push(() => hookPeer.close());
    const hookCall = echoOf(hookPeer);
    variants.push({
      key: "floor2",
      depths: [],
      bigTput: false,
      call: async (size) => {
        await hookCall("tiny");
        await floorCall(size);
      },
    });

    // MCP SDK server, and the stdio floor.
    const mcpPeers: McpPeer[] = [];
    const node = process.execPath;
    for (const [key, script] of [
      ["sdk", "bench/fixtures/mcp-echo-server.js"],
      ["stdioFloor", "bench/fixtures/jsonrpc-echo-server.js"],
    ] as const) {
      const server = await startMcp(node, [join(REPO, script)], { TMPDIR: runTmp }, REPO);
      closers.push(() => server.close());
      mcpPeers.push(server);
      variants.push({
        key,
        depths: key === "sdk" ? DEPTHS : [],
        bigTput: key === "sdk",
        call: (size) => mcpEcho(server.client, payloads[size].args),
      });
    }

    // Tether: one broker, the library sessions and tether serve on it.
    const broker = openBroker(home);
    closers.push(() => broker.close()); // safe twice: serve's shutdown closes it first
    // tether serve, in this process, on a Unix socket under the run's TMPDIR. Its shutdown (after the
    // library sessions', closers run in reverse) closes its session and the broker.
    const token = randomBytes(32).toString("hex");
    const server = new ServeServer({ broker, token, log: createLogger({ level: "error" }), say: () => {} });
    const { url } = await server.listen({ socket: join(runTmp, "serve.sock") });
    closers.push(() => server.shutdown(new Promise(() => {})));
    const libCall = (session: Session) => async (size: Size) =>
      checkReport(await session.callTool("echo", payloads[size].json), payloads[size].textBytes);
    const lib = await openSession(broker, "lib", workspace, ["echo"]);
    closers.push(() => lib.close());
    variants.push({ key: "lib", depths: DEPTHS, bigTput: true, call: libCall(lib) });

    want(broker, "hook", ["nop-guard"]);
    const hooked = await openSession(broker, "hook", workspace, ["echo", "nop-guard"]);
    closers.push(() => hooked.close());
    variants.push({ key: "hook", depths: [1, IN_FLIGHT], bigTput: true, call: libCall(hooked) });

    if (HOOK_MATCH !== null) {
      const nomatch = await nonMatchingHook(broker, runTmp, workspace, HOOK_MATCH);
      if (typeof nomatch === "string") notes.push(nomatch);
      else {
        closers.push(() => nomatch.close());
        variants.push({ key: "nomatch", depths: [], bigTput: false, call: libCall(nomatch) });
      }
    }

    if (HAS_CONCURRENCY) {
      const dir = join(runTmp, "ext", "echo-pool");
      copyExtension(ECHO_DIR, dir, (m) => withLimit(renamed(m, "echo-pool"), "concurrency = 8"));
      await installApproved(broker, dir, false);
      want(broker, "pool", ["echo-pool"]);
      want(broker, "pool", ["echo"], false);
      const pool = await openSession(broker, "pool", workspace, ["echo-pool"]);
      closers.push(() => pool.close());
      variants.push({ key: "pool", depths: DEPTHS, bigTput: false, call: libCall(pool) });
    } else {
      notes.push(
        "`[limits] concurrency` is not in this checkout's manifest: the 8-in-flight rows run on one satellite per session (calls queue).",
      );
    }

    const rpc = await RpcClient.connect(url, token);
    closers.push(() => rpc.close());
    await rpc.request("session.open", { id: "serve", workspace });
    variants.push({
      key: "serve",
      depths: [1, IN_FLIGHT],
      bigTput: true,
      call: async (size) => {
        const answer = await rpc.send("tool.call", { session: "serve", tool: "echo", arguments: payloads[size].args });
        const outcome = (
          answer.result as { outcome?: { ok: boolean; value?: { content: { text?: string }[] } } } | undefined
        )?.outcome;
        if (outcome?.ok !== true || outcome.value?.content[0]?.text?.length !== payloads[size].textBytes) {
          throw new Error(`serve echo answered something else: ${JSON.stringify(answer).slice(0, 300)}`);
        }
      },
    });
    const wsFloor = await echoWsServer(join(runTmp, "ws-floor.sock"));
    closers.push(() => wsFloor.close());
    const wsClient = await RpcClient.connect(wsFloor.url);
    closers.push(() => wsClient.close());
    variants.push({
      key: "wsFloor",
      depths: [],
      bigTput: false,
      call: async (size) => {
        const answer = await wsClient.send("tool.call", {
          session: "serve",
          tool: "echo",
          arguments: payloads[size].args,
        });
        if ((answer.params as { arguments?: { text?: string } }).arguments?.text?.length !== payloads[size].textBytes)
          throw new Error("ws floor answered something else");
      },
    });

    // tether mcp, as a child, on the same home (its own broker; the session is its own).
    const mcp = await startMcp(
      node,
      [join(REPO, "bin/tether.js"), "mcp", "--session", "mcp", "--workspace", workspace],
      tetherEnv(home, runTmp),
      REPO,
    );
    closers.push(() => mcp.close());
    mcpPeers.push(mcp);
    const tools = (await mcp.client.listTools()).tools.map((t) => t.name).sort();
    if (tools.join() !== "count,echo")
      throw new Error(`tether mcp serves [${tools.join(", ")}], not [count, echo]: ${mcp.stderr()}`);
    variants.push({
      key: "mcp",
      depths: [1, IN_FLIGHT],
      bigTput: true,
      call: (size) => mcpEcho(mcp.client, payloads[size].args),
    });

    for (const v of variants) for (const size of ["tiny", "big"] as const) await v.call(size);
    return { variants, notes, mcpPeers, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The environment of a `tether` child: the bench's home, the run's TMPDIR, quiet logs. */
/**
 * `make bench` builds dist/ and sets TETHER_FROM_DIST=1: the `tether mcp` child then runs the
 * compiled JavaScript, as an installed package does. Without it (`npx tsx bench/vs-mcp.ts` in a
 * checkout) the child runs the sources through tsx, which costs its cold start ~0.5 s more.
 */
const FROM_DIST = process.env["TETHER_FROM_DIST"] === "1";
/** This file as `make build` compiled it (dist/bench/vs-mcp.js), not through tsx: tsx's transform adds to every call. */
const COMPILED = import.meta.url.endsWith(".js");

function tetherEnv(home: string, runTmp: string): Record<string, string> {
  return { TETHER_HOME: home, TETHER_LOG: "error", TMPDIR: runTmp, ...(FROM_DIST ? { TETHER_FROM_DIST: "1" } : {}) };
}

/**
 * A copy of nop-guard whose tool_call hook has a matcher that matches no tool of the bench, in a session
 * of its own; or why there is none. The session's first call must not ask the hook (else the matcher did
 * not skip it).
 */
async function nonMatchingHook(
  broker: Broker,
  runTmp: string,
  workspace: string,
  match: string,
): Promise<Session | string> {
  const dir = join(runTmp, "ext", "nop-nomatch");
  copyExtension(NOP_GUARD_DIR, dir, (m) =>
    renamed(m, "nop-nomatch").replace(/^event = "tool_call"$/m, `event = "tool_call"\n${match}`),
  );
  await installApproved(broker, dir, false);
  want(broker, "nomatch", ["nop-nomatch"]);
  const session = await openSession(broker, "nomatch", workspace, ["echo", "nop-nomatch"]);
  const report = await session.callTool("echo", payloads.tiny.json);
  if (report.trace.some((row) => row.extension === "nop-nomatch")) {
    await session.close();
    return `n/a: the hook with \`${match}\` was still asked about echo`;
  }
  return session;
}

// ---------------------------------------------------------------------------

async function measureWarm(variants: readonly Variant[]): Promise<Figures> {
  const lat = new Map(variants.map((v) => [v.key, { tiny: [] as bigint[], big: [] as bigint[] }]));
  const tput = new Map(variants.map((v) => [v.key, new Map<number, number[]>()]));
  const bigTput = new Map(variants.map((v) => [v.key, [] as number[]]));
  log(`warm-up: ${WARMUP} tiny and ${WARMUP} × 64 KiB calls per variant`);
  for (const v of variants) {
    for (const size of ["tiny", "big"] as const) await sequential(() => v.call(size), WARMUP);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with another variant, so none is always measured first.
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const size of ["tiny", "big"] as const) {
      const n = Math.ceil(LAT_SAMPLES[size] / ROUNDS);
      log(
        `round ${round + 1}/${ROUNDS}: ${size === "tiny" ? "tiny" : "64 KiB"} latency, ${n} sequential calls per variant`,
      );
      for (const v of order) {
        const call = () => v.call(size);
        await sequential(call, WARMUP_ROUND);
        lat.get(v.key)![size].push(...(await sequential(call, n)));
      }
    }
    log(`round ${round + 1}/${ROUNDS}: calls/s (${WINDOW_MS} ms windows)`);
    for (const v of order) {
      for (const depth of v.depths) {
        const runs = tput.get(v.key)!;
        if (!runs.has(depth)) runs.set(depth, []);
        runs.get(depth)!.push(await closedLoop([() => v.call("tiny")], depth, WINDOW_MS));
      }
      if (v.bigTput) bigTput.get(v.key)!.push(await closedLoop([() => v.call("big")], 1, WINDOW_MS));
    }
  }
  return {
    lat: new Map([...lat].map(([k, s]) => [k, { tiny: summarise(s.tiny), big: summarise(s.big) }])),
    tput: new Map([...tput].map(([k, runs]) => [k, new Map([...runs].map(([d, xs]) => [d, median(xs)]))])),
    bigTput: new Map([...bigTput].filter(([, xs]) => xs.length > 0).map(([k, xs]) => [k, median(xs)])),
  };
}

// ---------------------------------------------------------------------------

type ColdKey = "floor" | "sdk" | "lib" | "hook" | "serve" | "mcp" | "stdioFloor";

/** Each kind's cold start to its first answer, in ms. */
function coldStarts(
  runTmp: string,
  home: string,
  workspace: string,
  floorScript: string,
): Record<ColdKey, (rep: number) => Promise<number>> {
  const since = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
  const mcpCold = async (args: string[], env: Record<string, string>) => {
    const t0 = process.hrtime.bigint();
    const peer = await startMcp(process.execPath, args, env, REPO);
    try {
      await mcpEcho(peer.client, payloads.tiny.args);
      return since(t0);
    } finally {
      await peer.close();
    }
  };
  const tetherCold = async (id: string, extensions: string[]) => {
    const t0 = process.hrtime.bigint();
    const broker = openBroker(home);
    try {
      if (extensions.length > 1) want(broker, id, ["nop-guard"]);
      const session = await openSession(broker, id, workspace, extensions);
      checkReport(await session.callTool("echo", payloads.tiny.json), 2);
      const took = since(t0);
      await session.close();
      return took;
    } finally {
      await broker.close();
    }
  };
  return {
    floor: async () => {
      const t0 = process.hrtime.bigint();
      const { peer } = await FloorPeer.boot(floorScript);
      try {
        await peer.call(payloads.tiny.json);
        return since(t0);
      } finally {
        await peer.close();
      }
    },
    sdk: () => mcpCold([join(REPO, "bench/fixtures/mcp-echo-server.js")], { TMPDIR: runTmp }),
    stdioFloor: () => mcpCold([join(REPO, "bench/fixtures/jsonrpc-echo-server.js")], { TMPDIR: runTmp }),
    lib: (rep) => tetherCold(`cold-lib-${rep}`, ["echo"]),
    hook: (rep) => tetherCold(`cold-hook-${rep}`, ["echo", "nop-guard"]),
    serve: async (rep) => {
      const t0 = process.hrtime.bigint();
      const broker = openBroker(home);
      const token = randomBytes(32).toString("hex");
      const server = new ServeServer({ broker, token, log: createLogger({ level: "error" }), say: () => {} });
      try {
        const { url } = await server.listen({ socket: join(runTmp, `cold-${rep}.sock`) });
        const rpc = await RpcClient.connect(url, token);
        try {
          await rpc.request("session.open", { id: `cold-serve-${rep}`, workspace });
          const result = (await rpc.request("tool.call", {
            session: `cold-serve-${rep}`,
            tool: "echo",
            arguments: payloads.tiny.args,
          })) as { outcome: { ok: boolean } };
          if (!result.outcome.ok) throw new Error("serve's first echo failed");
          return since(t0);
        } finally {
          await rpc.close();
        }
      } finally {
        await server.shutdown(new Promise(() => {}));
      }
    },
    mcp: (rep) =>
      mcpCold(
        [join(REPO, "bin/tether.js"), "mcp", "--session", `cold-mcp-${rep}`, "--workspace", workspace],
        tetherEnv(home, runTmp),
      ),
  };
}

async function measureCold(kinds: Record<ColdKey, (rep: number) => Promise<number>>): Promise<Map<ColdKey, number[]>> {
  const out = new Map<ColdKey, number[]>(Object.keys(kinds).map((k) => [k as ColdKey, []]));
  for (let rep = 0; rep <= COLD_REPS; rep++) {
    log(`cold starts: ${rep === 0 ? "warm-up rep (discarded)" : `rep ${rep}/${COLD_REPS}`}`);
    for (const [key, run] of Object.entries(kinds) as [ColdKey, (rep: number) => Promise<number>][]) {
      const ms = await run(rep);
      if (rep > 0) out.get(key)!.push(ms);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

function report(
  figures: Figures,
  cold: Map<ColdKey, number[]>,
  notes: readonly string[],
  meta: { date: string; load: string },
): void {
  const out = process.stdout;
  const { lat, tput, bigTput } = figures;
  const us = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? "—" : fmt(x));
  const perS = (x: number | undefined) => (x === undefined ? "—" : `${fmt(x)}/s`);
  const keys = [...lat.keys()];

  out.write('\n== Per variant: echo, tiny {"text":"hi"} unless said; µs, calls/s, ms\n\n');
  out.write(
    table(
      [
        "variant",
        "p50 µs",
        "p99 µs",
        "calls/s seq",
        `calls/s ${IN_FLIGHT} in flight`,
        "64 KiB p50 µs",
        "64 KiB calls/s",
        `cold start ms (median of ${COLD_REPS})`,
      ],
      keys.map((k) => [
        LABELS[k],
        us(lat.get(k)!.tiny.p50),
        us(lat.get(k)!.tiny.p99),
        perS(tput.get(k)!.get(1)),
        perS(tput.get(k)!.get(IN_FLIGHT)),
        us(lat.get(k)!.big.p50),
        perS(bigTput.get(k)),
        cold.has(k as ColdKey) ? fmt(median(cold.get(k as ColdKey)!)) : "—",
      ]),
    ),
  );
  out.write("\n\n== calls/s against calls in flight (tiny; one session / one client / one peer)\n\n");
  const curve = keys.filter((k) => DEPTHS.every((d) => tput.get(k)!.has(d)));
  out.write(
    table(
      ["variant", ...DEPTHS.map((d) => `${d} in flight`)],
      curve.map((k) => [LABELS[k], ...DEPTHS.map((d) => perS(tput.get(k)!.get(d)))]),
    ),
  );

  // Targets.
  const p50 = (k: Key, size: Size = "tiny") => lat.get(k)![size].p50;
  const rows: string[][] = [];
  // `floor`: the same target's ratio for the raw floor in Tether's place (what no broker could beat
  // on this machine in this run), where the target has one.
  const row = (name: string, value: string, ratio: number, target: string, pass: boolean, floor = "") =>
    rows.push([name, value, `${ratio.toFixed(2)}×`, target, pass ? "PASS" : "MISS", floor]);
  const floorRatio = (ratio: number, pass: boolean) => `${ratio.toFixed(2)}× ${pass ? "PASS" : "MISS"}`;
  const lib = p50("lib");
  row(
    "Session.callTool tiny p50 vs MCP SDK p50",
    `${fmt(lib)} / ${fmt(p50("sdk"))} µs`,
    lib / p50("sdk"),
    `≤ ${TARGET.vsSdkP50}×`,
    lib <= TARGET.vsSdkP50 * p50("sdk"),
    floorRatio(p50("floor") / p50("sdk"), p50("floor") <= TARGET.vsSdkP50 * p50("sdk")),
  );
  const seq = tput.get("lib")!.get(1)!;
  const sdkSeq = tput.get("sdk")!.get(1)!;
  const floorSeq = tput.get("floor")!.get(1)!;
  const floorInFlight = tput.get("floor")!.get(IN_FLIGHT)!;
  row(
    "Session.callTool sequential calls/s vs SDK's",
    `${fmt(seq)} / ${fmt(sdkSeq)}/s`,
    seq / sdkSeq,
    `≥ ${TARGET.vsSdkSeq}×`,
    seq >= TARGET.vsSdkSeq * sdkSeq,
    floorRatio(floorSeq / sdkSeq, floorSeq >= TARGET.vsSdkSeq * sdkSeq),
  );
  row(
    "Session.callTool tiny p50 vs raw floor p50",
    `${fmt(lib)} / ${fmt(p50("floor"))} µs`,
    lib / p50("floor"),
    `≤ ${TARGET.vsFloorP50}×`,
    lib <= TARGET.vsFloorP50 * p50("floor"),
  );
  const inFlightKey: Key = tput.has("pool") ? "pool" : "lib";
  const inFlight = tput.get(inFlightKey)!.get(IN_FLIGHT)!;
  const sdkInFlight = tput.get("sdk")!.get(IN_FLIGHT)!;
  row(
    `${IN_FLIGHT} in flight on one session (${inFlightKey === "pool" ? "concurrency = 8, one satellite" : "one satellite"}) vs one SDK client, calls/s`,
    `${fmt(inFlight)} / ${fmt(sdkInFlight)}/s`,
    inFlight / sdkInFlight,
    `≥ ${TARGET.vsSdkInFlight}×`,
    inFlight >= TARGET.vsSdkInFlight * sdkInFlight,
    floorRatio(floorInFlight / sdkInFlight, floorInFlight >= TARGET.vsSdkInFlight * sdkInFlight),
  );
  row(
    "one matching tool_call hook: p50 vs unhooked",
    `${fmt(p50("hook"))} / ${fmt(lib)} µs`,
    p50("hook") / lib,
    `≤ ${TARGET.hook}×`,
    p50("hook") <= TARGET.hook * lib,
    // The floor of a hooked call is two round trips in series, to two peers, against one.
    floorRatio(p50("floor2") / p50("floor"), p50("floor2") <= TARGET.hook * p50("floor")),
  );
  if (lat.has("nomatch")) {
    row(
      "one non-matching tool_call hook: p50 vs unhooked",
      `${fmt(p50("nomatch"))} / ${fmt(lib)} µs`,
      p50("nomatch") / lib,
      `≤ ${TARGET.noMatch}×`,
      p50("nomatch") <= TARGET.noMatch * lib,
    );
  } else {
    rows.push([
      "one non-matching tool_call hook: p50 vs unhooked",
      HOOK_MATCH !== null ? (notes.find((n) => n.startsWith("n/a")) ?? "n/a") : "n/a (hook matchers not merged yet)",
      "",
      `≤ ${TARGET.noMatch}×`,
      "n/a",
      "",
    ]);
  }
  for (const [k, floor, what] of [
    ["serve", "wsFloor", "ws floor"],
    ["mcp", "stdioFloor", "stdio floor"],
  ] as const) {
    const bound = lib + p50(floor);
    row(
      `${k === "serve" ? "tether serve" : "tether mcp"} p50 vs (library p50 + ${what} p50)`,
      `${fmt(p50(k))} / (${fmt(lib)} + ${fmt(p50(floor))}) µs`,
      p50(k) / bound,
      `≤ ${TARGET.overTransport}×`,
      p50(k) <= TARGET.overTransport * bound,
    );
  }
  const bigLib = p50("lib", "big");
  const bigSdk = p50("sdk", "big");
  row(
    "64 KiB each way: Tether p50 / SDK p50",
    `${fmt(bigLib)} / ${fmt(bigSdk)} µs`,
    bigLib / bigSdk,
    "< 1×",
    bigLib < bigSdk,
  );
  const bigT = bigTput.get("lib")!;
  const bigTS = bigTput.get("sdk")!;
  row(
    "64 KiB each way: SDK calls/s / Tether calls/s",
    `${fmt(bigTS)} / ${fmt(bigT)}/s`,
    bigTS / bigT,
    "< 1×",
    bigTS < bigT,
  );
  const coldLib = median(cold.get("lib")!);
  const coldSdk = median(cold.get("sdk")!);
  row(
    "cold start to first answer: Tether library / SDK",
    `${fmt(coldLib)} / ${fmt(coldSdk)} ms`,
    coldLib / coldSdk,
    "< 1×",
    coldLib < coldSdk,
  );
  const coldMcp = median(cold.get("mcp")!);
  row(
    "cold start to first answer: tether mcp / SDK (both spawned)",
    `${fmt(coldMcp)} / ${fmt(coldSdk)} ms`,
    coldMcp / coldSdk,
    "< 1×",
    coldMcp < coldSdk,
  );

  out.write("\n\n== Targets (every ratio from this run)\n\n");
  out.write(table(["target", "this run", "ratio", "target", "result", "the raw floor in Tether's place"], rows));
  out.write("\n");
  for (const note of notes) out.write(`\nnote: ${note}`);
  out.write(`\n\n${meta.date}; load average at start / end: ${meta.load}\n`);
}

function plot(figures: Figures, meta: { date: string; load: string }): void {
  const series: { key: Key; name: string; color: string; dashed?: boolean }[] = [
    { key: "lib", name: "Tether (one session)", color: "#1f77b4" },
    { key: "pool", name: "Tether, concurrency 8", color: "#17becf", dashed: true },
    { key: "sdk", name: "MCP SDK (one client)", color: "#d62728" },
    { key: "floor", name: "raw floor (one peer)", color: "#7f7f7f", dashed: true },
  ];
  const svg = lineChart({
    title: "Tool calls/s against calls in flight (echo, tiny)",
    subtitle: `bench/vs-mcp.ts, ${cpus().length} cores, ${meta.date}, load ${meta.load}`,
    xLabel: "calls in flight",
    yLabel: "calls/s (log scale)",
    logY: true,
    xs: [...DEPTHS],
    series: series
      .filter((s) => figures.tput.has(s.key))
      .map((s) => ({
        name: s.name,
        color: s.color,
        ...(s.dashed === true ? { dashed: true } : {}),
        ys: DEPTHS.map((d) => figures.tput.get(s.key)!.get(d) ?? Number.NaN),
      })),
  });
  mkdirSync(join(REPO, "docs/perf"), { recursive: true });
  writeFileSync(SVG_PATH, svg);
  process.stdout.write(`\nwrote ${SVG_PATH.slice(REPO.length + 1)}\n`);
}

// ---------------------------------------------------------------------------

async function run(runTmp: string): Promise<void> {
  const started = process.hrtime.bigint();
  const loadStart = loadAverage();
  const denoVersion = execFileSync(denoBinary(), ["--version"], { encoding: "utf8" }).split("\n")[0];
  log(`${cpus().length} CPUs, node ${process.version}, ${denoVersion}; BENCH_SCALE ${SCALE}`);
  const home = join(runTmp, "home");
  const workspace = join(runTmp, "workspace");
  mkdirSync(workspace, { recursive: true });

  // The home: echo on by default, nop-guard only where a session asks for it.
  const installer = openBroker(home);
  try {
    await installApproved(installer, ECHO_DIR);
    await installApproved(installer, NOP_GUARD_DIR, false);
  } finally {
    await installer.close();
  }
  const floor = await bundleFloorEcho();
  let figures: Figures;
  let cold: Map<ColdKey, number[]>;
  let notes: string[];
  try {
    log("warm: booting every variant");
    const setup = await setUp(runTmp, home, workspace, floor.script);
    notes = setup.notes;
    try {
      figures = await measureWarm(setup.variants);
    } finally {
      await setup.close();
    }
    cold = await measureCold(coldStarts(runTmp, home, workspace, floor.script));
  } finally {
    floor.cleanup();
    await esbuild.stop();
  }
  const meta = { date: new Date().toISOString().slice(0, 10), load: `${loadStart} / ${loadAverage()}` };
  process.stdout.write(
    `\nTether vs MCP bench — ${cpus().length} CPUs (nproc), node ${process.version}, ${denoVersion}, bwrap ${findBwrap()}\n`,
  );
  process.stdout.write(
    `latency: ${LAT_SAMPLES.tiny} tiny and ${LAT_SAMPLES.big} × 64 KiB sequential calls per variant over ${ROUNDS} interleaved rounds; calls/s: median of ${ROUNDS} ${WINDOW_MS} ms windows\n`,
  );
  report(figures, cold, notes, meta);
  plot(figures, meta);
  // tsx keeps its compile cache for the `tether` children in TMPDIR (tsx-<uid>): ours, expected.
  warnLeftovers(runTmp, [/^home$/, /^workspace$/, /^ext$/, /^tsx-\d+$/]);
  warnStrays(["deno", "bwrap", "node"]);
  process.stdout.write(`\nbench took ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s\n`);
}

runJailBench("tether-bench-vs-mcp-", run);
