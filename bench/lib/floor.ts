/**
 * The floor: raw Node ⇄ Deno msgpack over a Unix socket, with none of the
 * broker's work (no valibot, no tokens, no timers, no jail). The Node side uses
 * msgpackr with the codec's options and the same 4-byte big-endian framing,
 * written here from scratch so the broker's own framing is not part of it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { Packr, Unpackr } from "msgpackr";
import { ARTIFACT_BUILD_OPTIONS } from "../../broker/install/bundle.js";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { denoRunArgs } from "../../broker/jail/sandbox.js";

/** bench/fixtures, from bench/lib (tsx) or from dist/bench/lib (compiled by `make build`). */
export const FIXTURES =
  [
    resolve(dirname(fileURLToPath(import.meta.url)), "../fixtures"),
    resolve(dirname(fileURLToPath(import.meta.url)), "../../../bench/fixtures"),
  ].find((dir) => existsSync(join(dir, "floor-echo.js"))) ??
  resolve(dirname(fileURLToPath(import.meta.url)), "../fixtures");
export const FLOOR_BOOT_SCRIPT = join(FIXTURES, "floor-boot.js");

const packr = new Packr({ useRecords: false, moreTypes: false });
export const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

/** The same Deno flags the broker passes (minus the bwrap layer and the cleared-env details). */
const denoArgs = denoRunArgs;

/**
 * Bundles a script of bench/fixtures (floor-echo.js unless named; msgpackr inlined, as in an artifact)
 * into a temp folder with no package.json.
 */
export async function bundleFloorEcho(fixture = "floor-echo.js"): Promise<{ script: string; cleanup: () => void }> {
  const result = await esbuild.build({ ...ARTIFACT_BUILD_OPTIONS, entryPoints: [join(FIXTURES, fixture)] });
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-floor-"));
  const script = join(dir, fixture);
  writeFileSync(script, result.outputFiles[0]!.text);
  return { script, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Splits a byte stream into frame bodies (4-byte big-endian length prefix).
 * Pieces of a partial frame are only listed; they are joined once, when the
 * whole frame has arrived, so a frame costs one copy however many reads it took.
 */
export class Frames {
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** Bytes needed before parsing is worth trying: a header, or the whole pending frame. */
  #need = 4;

  push(chunk: Buffer): Buffer[] {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    if (this.#bytes < this.#need) return [];
    const data = this.#chunks.length === 1 ? chunk : Buffer.concat(this.#chunks, this.#bytes);
    const out: Buffer[] = [];
    let off = 0;
    while (data.length - off >= 4) {
      const size = data.readUInt32BE(off);
      if (data.length - off - 4 < size) break;
      out.push(data.subarray(off + 4, off + 4 + size));
      off += 4 + size;
    }
    const rest = data.subarray(off);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#bytes = rest.length;
    this.#need = rest.length >= 4 ? 4 + rest.readUInt32BE(0) : 4;
    return out;
  }
}

export function encode(frame: object): Buffer {
  const body = packr.pack(frame);
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32BE(body.length, 0);
  out.set(body, 4);
  return out;
}

/** One floor Deno process and its connection. */
export class FloorPeer {
  readonly child: ChildProcess;
  readonly #socket: Socket;
  readonly #dir: string;
  readonly #waiting = new Map<number, (reply: unknown) => void>();
  #nextId = 1;
  #exited: Promise<void>;

  private constructor(child: ChildProcess, socket: Socket, dir: string, frames: Frames, exited: Promise<void>) {
    this.child = child;
    this.#socket = socket;
    this.#dir = dir;
    this.#exited = exited;
    socket.on("data", (chunk: Buffer) => {
      for (const body of frames.push(chunk)) {
        const reply = unpackr.unpack(body) as { id: number };
        const resolveReply = this.#waiting.get(reply.id);
        if (resolveReply === undefined) continue;
        this.#waiting.delete(reply.id);
        resolveReply(reply);
      }
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /**
   * Spawns Deno on `script` (no bwrap), waits for its first frame. Returns the peer and the
   * boot time in ns (fresh socket folder and listen, spawn, first whole frame).
   */
  static async boot(
    script: string,
    options: { memoryMb?: number; stdin?: string } = {},
  ): Promise<{ peer: FloorPeer; bootNs: bigint }> {
    const memoryMb = options.memoryMb ?? 64;
    const t0 = process.hrtime.bigint();
    const dir = mkdtempSync(join(tmpdir(), "tether-bench-sock-"));
    const socketPath = join(dir, "s.sock");
    const server: Server = createServer();
    const connected = new Promise<Socket>((resolveSocket, reject) => {
      server.once("connection", (socket) => {
        server.close();
        resolveSocket(socket);
      });
      server.once("error", reject);
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    // A cleared environment and a fresh DENO_DIR, as the broker gives a satellite.
    const child = spawn(denoBinary(), denoArgs(script, socketPath, memoryMb), {
      env: { HOME: dir, DENO_DIR: join(dir, "deno"), NO_COLOR: "1", PATH: "/nonexistent" },
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
    child.stdin!.on("error", () => {});
    // A satellite artifact reads its boot token from stdin before it connects.
    if (options.stdin !== undefined) child.stdin!.write(options.stdin);
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const failed = exited.then(() => {
      throw new Error(`floor Deno exited before its first frame: ${stderr}`);
    });
    const frames = new Frames();
    const socket = await Promise.race([connected, failed]);
    await Promise.race([
      new Promise<void>((r) => {
        const onData = (chunk: Buffer) => {
          if (frames.push(chunk).length > 0) {
            socket.off("data", onData);
            r();
          }
        };
        socket.on("data", onData);
      }),
      failed,
    ]);
    const bootNs = process.hrtime.bigint() - t0;
    failed.catch(() => {});
    return { peer: new FloorPeer(child, socket, dir, frames, exited), bootNs };
  }

  /** One call-shaped request; resolves with the decoded result frame. Pipelining is allowed. */
  call(args: string): Promise<unknown> {
    const id = this.#nextId++;
    const reply = new Promise<unknown>((r) => this.#waiting.set(id, r));
    // Shaped and sized like the broker's `call` frame (a 32-character token, as mintToken makes).
    this.#socket.write(
      encode({
        t: "call",
        id,
        token: "0123456789abcdefghijklmnopqrstuv",
        kind: "tool",
        name: "echo",
        args,
        strand: "bench",
        deadline_ms: 5000,
      }),
    );
    return reply;
  }

  /** stdin EOF (the script exits), then SIGKILL if it lingers; removes the socket folder. */
  async close(): Promise<void> {
    this.#socket.destroy();
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 1000);
    await this.#exited;
    clearTimeout(timer);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
