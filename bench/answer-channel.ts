/**
 * `npx tsx bench/answer-channel.ts`: would a satellite's answers cost less over a
 * pipe than over its socket? A satellite sleeps about twice a call: the broker's
 * read of an answer frees room on the satellite's socket, which wakes the
 * satellite's event loop (it registers every socket for write readiness) for
 * nothing. A pipe wakes its writer only when it was full, and Deno writes a file
 * with `writeSync`, outside its event loop.
 *
 * The raw floor's pair (bench/lib/floor.ts, no broker, no jail), its Deno peer
 * (bench/fixtures/answer-channel-echo.js) answering each request over the socket
 * it came on (queued and written as the satellite runtime's channel writes) or
 * over a FIFO, as the request says: one process, one peer, the two ways in
 * alternating blocks (socket, pipe, pipe, socket), medians. The peer spins
 * `WORK_US` µs on each call before answering (default 0, then 50: about what a
 * satellite spends on a call, which is what makes the second wake-up happen).
 * Per call, sequentially: wall, p50, each side's CPU, the Deno side's sleeps;
 * then calls/s with 8 in flight. `N` calls a block (default 3000), `BLOCKS`
 * rounds of four blocks (default 8).
 */
import { execFileSync, spawn } from "node:child_process";
import { constants, mkdtempSync, openSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { denoBinary } from "../broker/jail/deno-binary.js";
import { denoRunArgs } from "../broker/jail/sandbox.js";
import { Frames, bundleFloorEcho, encode, unpackr } from "./lib/floor.js";
import { cpuNs, sleeps } from "./lib/procs.js";
import { fmt, median, table } from "./lib/stats.js";

const N = Number(process.env.N ?? 3000);
const BLOCKS = Number(process.env.BLOCKS ?? 8);
const WORK = process.env.WORK_US !== undefined ? [Number(process.env.WORK_US)] : [0, 50];
const DEPTH = 8;

type Via = "socket" | "pipe";

/** One Deno peer: requests over a Unix socket, answers over that socket or a FIFO. */
class Peer {
  readonly #waiting = new Map<number, () => void>();
  #nextId = 1;

  private constructor(
    readonly pid: number,
    readonly close: () => Promise<void>,
    readonly socket: Socket,
  ) {}

  static async start(script: string, workUs: number): Promise<Peer> {
    const dir = mkdtempSync(join(tmpdir(), "tether-bench-answer-"));
    const socketPath = join(dir, "s.sock");
    const fifoPath = join(dir, "answers.fifo");
    execFileSync("mkfifo", ["-m", "600", fifoPath]);
    // Read and write: the FIFO never reads as ended while the peer has not opened it yet.
    const fifo = new Socket({
      fd: openSync(fifoPath, constants.O_RDWR | constants.O_NONBLOCK),
      readable: true,
      writable: false,
    });
    const server = createServer();
    const connected = new Promise<Socket>((r) => server.once("connection", r));
    await new Promise<void>((r) => server.listen(socketPath, r));
    // The broker's flags for a satellite, with write on the FIFO too.
    const args = denoRunArgs(script, socketPath, 64).map((arg) =>
      arg === `--allow-write=${socketPath}` ? `--allow-write=${socketPath},${fifoPath}` : arg,
    );
    const child = spawn(denoBinary(), [...args, fifoPath, String(workUs)], {
      env: { HOME: dir, DENO_DIR: join(dir, "deno"), NO_COLOR: "1", PATH: "/nonexistent" },
      stdio: ["pipe", "ignore", "inherit"],
    });
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const failed = exited.then(() => {
      throw new Error("the peer's Deno exited before it connected (its stderr is above)");
    });
    const socket = await Promise.race([connected, failed]);
    failed.catch(() => {});
    server.close();
    const close = async () => {
      socket.destroy();
      fifo.destroy();
      child.stdin!.end();
      await exited;
      rmSync(dir, { recursive: true, force: true });
    };
    const peer = new Peer(child.pid!, close, socket);
    const hello = new Promise<void>((r) => peer.#waiting.set(0, r));
    for (const stream of [socket, fifo]) {
      const frames = new Frames();
      stream.on("data", (chunk: Buffer) => {
        for (const body of frames.push(chunk)) {
          const reply = unpackr.unpack(body) as { id?: number };
          const id = reply.id ?? 0;
          peer.#waiting.get(id)?.();
          peer.#waiting.delete(id);
        }
      });
    }
    await hello;
    return peer;
  }

  call(via: Via): Promise<void> {
    const id = this.#nextId++;
    const reply = new Promise<void>((r) => this.#waiting.set(id, r));
    this.socket.write(
      encode({
        t: "call",
        id,
        via,
        token: "0123456789abcdefghijklmnopqrstuv",
        kind: "tool",
        name: "echo",
        args: '{"text":"hi"}',
      }),
    );
    return reply;
  }
}

interface Block {
  wallUs: number;
  p50Us: number;
  nodeCpuUs: number;
  denoCpuUs: number;
  denoSleeps: number;
  inFlightCallsPerSec: number;
}

async function block(peer: Peer, via: Via): Promise<Block> {
  const lat: number[] = [];
  const cpu0 = process.cpuUsage();
  const deno0 = cpuNs(peer.pid);
  const sleeps0 = sleeps(peer.pid);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    const at = process.hrtime.bigint();
    await peer.call(via);
    lat.push(Number(process.hrtime.bigint() - at) / 1000);
  }
  const wallNs = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage(cpu0);
  const denoNs = cpuNs(peer.pid) - deno0;
  const slept = sleeps(peer.pid) - sleeps0;
  const p0 = process.hrtime.bigint();
  let started = 0;
  const lane = async () => {
    while (started < N) {
      started++;
      await peer.call(via);
    }
  };
  await Promise.all(Array.from({ length: DEPTH }, lane));
  const inFlightNs = Number(process.hrtime.bigint() - p0);
  return {
    wallUs: wallNs / 1000 / N,
    p50Us: median(lat),
    nodeCpuUs: (cpu.user + cpu.system) / N,
    denoCpuUs: denoNs / 1000 / N,
    denoSleeps: slept / N,
    inFlightCallsPerSec: N / (inFlightNs / 1e9),
  };
}

const bundle = await bundleFloorEcho("answer-channel-echo.js");
const rows: string[][] = [];
try {
  for (const workUs of WORK) {
    const peer = await Peer.start(bundle.script, workUs);
    try {
      for (const via of ["socket", "pipe"] as const) await block(peer, via); // warm-up
      const seen: Record<Via, Block[]> = { socket: [], pipe: [] };
      for (let b = 0; b < BLOCKS; b++)
        for (const via of ["socket", "pipe", "pipe", "socket"] as const) seen[via].push(await block(peer, via));
      const med = (via: Via, key: keyof Block) => median(seen[via].map((x) => x[key]));
      for (const via of ["socket", "pipe"] as const)
        rows.push([
          String(workUs),
          via,
          fmt(med(via, "wallUs")),
          fmt(med(via, "p50Us")),
          fmt(med(via, "nodeCpuUs")),
          fmt(med(via, "denoCpuUs")),
          med(via, "denoSleeps").toFixed(2),
          med(via, "inFlightCallsPerSec").toFixed(0),
        ]);
      const ratio = (key: keyof Block) => (med("pipe", key) / med("socket", key)).toFixed(2);
      rows.push([
        String(workUs),
        "pipe ÷ socket",
        ratio("wallUs"),
        ratio("p50Us"),
        ratio("nodeCpuUs"),
        ratio("denoCpuUs"),
        ratio("denoSleeps"),
        ratio("inFlightCallsPerSec"),
      ]);
    } finally {
      await peer.close();
    }
  }
} finally {
  bundle.cleanup();
}
console.log(`${N} calls a block × ${BLOCKS * 2} blocks each way; medians per call`);
console.log(
  table(
    [
      "work µs",
      "answers over",
      "wall µs",
      "p50 µs",
      "Node CPU µs",
      "Deno CPU µs",
      "Deno sleeps",
      "8 in flight calls/s",
    ],
    rows,
  ),
);
