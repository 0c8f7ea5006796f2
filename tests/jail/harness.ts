/**
 * Host-side machinery of the jail escape suite: the listeners an escape would
 * have to reach, host files it would have to read, the host's view of a
 * running jail (through /proc/<pid> of the jailed processes), and one call of
 * the fixture's `attempt` tool.
 */
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, get, type Server as HttpServer } from "node:http";
import { randomBytes } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InvocationOutcome } from "../../broker/base/outcome.js";
import type { SatelliteSlot } from "../../broker/satellite/slot.js";
import type { Observation } from "./fixtures/escape/index.js";

/** The fixture's own folder, relative to the repository. */
export const FIXTURE = "tests/jail/fixtures/escape";

/** What one `attempt` call came back with. */
export type Seen =
  | { readonly answered: true; readonly id: string; readonly obs: Observation }
  | { readonly answered: false; readonly code: string; readonly msg: string };

export interface AttemptArgs {
  readonly id: string;
  readonly path?: string;
  readonly port?: number;
  readonly udpPort?: number;
  readonly name?: string;
  readonly ms?: number;
  readonly mb?: number;
}

/** Calls the fixture's `attempt` tool once on `slot`. */
export async function attempt(slot: SatelliteSlot, args: AttemptArgs, deadlineMs = 5_000): Promise<Seen> {
  const outcome: InvocationOutcome<"tool"> = await slot.invoke({
    kind: "tool",
    name: "attempt",
    args: JSON.stringify(args),
    strand: "jail",
    deadlineMs,
  });
  if (!outcome.ok) return { answered: false, code: outcome.error.code, msg: outcome.error.msg };
  const block = outcome.value.content[0];
  if (block?.type !== "json")
    throw new Error(`attempt ${args.id} answered no JSON block: ${JSON.stringify(outcome.value)}`);
  const { id, ...obs } = block.json as { id: string } & Observation;
  return { answered: true, id, obs: obs as Observation };
}

type Kind = "http" | "udp" | "unix" | "abstract" | "permissionBroker";

/**
 * Every listener an escape could try to reach, counting what reaches it.
 * `settle()` sends each one a sentinel the jail cannot forge and waits for it:
 * each listener takes connections (and datagrams) in the order they came, so
 * once the sentinels are in, anything an attempt sent before them is counted.
 */
export class Listeners {
  readonly hits: Record<Kind, number> = { http: 0, udp: 0, unix: 0, abstract: 0, permissionBroker: 0 };
  httpPort = 0;
  udpPort = 0;
  readonly unixPath: string;
  readonly permissionBrokerPath: string;
  readonly abstractName = `tether-jail-${process.pid}-${Date.now()}`;
  readonly #servers: Array<Server | HttpServer> = [];
  readonly #sockets = new Set<Socket>();
  /** The current sentinel's secret, and what waits for each listener to see it. */
  #nonce = "";
  readonly #waiting = new Map<Kind, () => void>();
  #udp: UdpSocket | null = null;

  constructor(readonly dir: string) {
    this.unixPath = join(dir, "other.sock");
    this.permissionBrokerPath = join(dir, "permission-broker.sock");
  }

  async start(): Promise<void> {
    // One HTTP server on [::] (dual stack): reached by 127.0.0.1, 0.0.0.0, [::1] and localhost alike.
    // It counts raw connections, so a TCP connect, a fetch, a WebSocket or a proxied request all show.
    const http = createHttpServer((req, res) => {
      if (this.#nonce !== "" && req.headers["x-sentinel"] === this.#nonce) this.#sentinel("http");
      res.end("escaped");
    });
    http.on("connection", () => this.hits.http++);
    this.httpPort = await listen(http, { port: 0, host: "::" });
    for (const [kind, path] of [
      ["unix", this.unixPath],
      ["abstract", `\0${this.abstractName}`],
      ["permissionBroker", this.permissionBrokerPath],
    ] as const) {
      const server = createServer((s) => this.#accepted(kind, s));
      await listen(server, { path });
      this.#servers.push(server);
    }
    this.#servers.push(http);
    const udp = createSocket("udp4");
    udp.on("message", (message) => {
      if (this.#nonce !== "" && message.toString() === this.#nonce) this.#sentinel("udp");
      else this.hits.udp++;
    });
    await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
    this.udpPort = udp.address().port;
    this.#udp = udp;
  }

  /** A Unix-socket connection: counted at once; the one whose first bytes are the nonce is the sentinel. */
  #accepted(kind: Kind, socket: Socket): void {
    this.hits[kind]++;
    this.#sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => this.#sockets.delete(socket));
    let head = "";
    socket.on("data", (chunk) => {
      head += chunk.toString("latin1");
      if (this.#nonce === "" || head.length < this.#nonce.length) return;
      if (head.startsWith(this.#nonce)) this.#sentinel(kind);
      socket.destroy();
    });
  }

  /** The sentinel is not a hit. */
  #sentinel(kind: Kind): void {
    if (kind !== "udp") this.hits[kind]--;
    this.#waiting.get(kind)?.();
  }

  /** Resolves once every listener has taken a sentinel sent now, after all that came before it. */
  async settle(): Promise<void> {
    this.#nonce = randomBytes(16).toString("hex");
    const seen = (["http", "udp", "unix", "abstract", "permissionBroker"] as const).map(
      (kind) => new Promise<void>((resolve) => this.#waiting.set(kind, resolve)),
    );
    const nonce = this.#nonce;
    // A fresh connection each time (no agent): the sentinel's connection is counted, then taken back.
    get({ host: "127.0.0.1", port: this.httpPort, agent: false, headers: { "x-sentinel": nonce } }, (res) =>
      res.resume(),
    ).on("error", () => undefined);
    for (const path of [this.unixPath, `\0${this.abstractName}`, this.permissionBrokerPath]) {
      const client = connect({ path }, () => client.end(nonce));
      client.on("error", () => undefined);
    }
    const udp = createSocket("udp4");
    udp.send(nonce, this.udpPort, "127.0.0.1", () => udp.close());
    await Promise.all(seen);
    this.#waiting.clear();
    this.#nonce = "";
  }

  total(): number {
    return Object.values(this.hits).reduce((a, b) => a + b, 0);
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await Promise.all(
      this.#servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            if ("closeAllConnections" in s) s.closeAllConnections();
            s.close(() => resolve());
          }),
      ),
    );
    await new Promise<void>((resolve) => (this.#udp ? this.#udp.close(() => resolve()) : resolve()));
  }
}

function listen(server: Server, options: { port: number; host: string } | { path: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options, () => {
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  });
}

/** Host files an escape would try to read, in a fresh host temp dir. */
export interface HostFiles {
  readonly dir: string;
  readonly json: string;
  readonly js: string;
  readonly jsonText: string;
  /** A name that must never appear anywhere: written attempts use it. */
  readonly marker: string;
  readonly cleanup: () => void;
}

export function hostFiles(): HostFiles {
  const dir = mkdtempSync(join(tmpdir(), "tether-jail-"));
  const json = join(dir, "secret.json");
  const js = join(dir, "secret.js");
  const jsonText = JSON.stringify({ secret: "host json, never for the jail" });
  writeFileSync(json, jsonText);
  writeFileSync(js, `export default "host js, never for the jail";\n`);
  const marker = `tether-jail-marker-${process.pid}-${Date.now()}`;
  return { dir, json, js, jsonText, marker, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The host's view of one jailed satellite. bwrap (the pid the broker spawned)
 * forks an init that is pid 1 inside the new pid namespace; Deno is its child.
 */
export interface JailView {
  readonly bwrapPid: number;
  readonly initPid: number;
  readonly denoPid: number;
  /** The host directory that held the socket bound at /run/tether/s.sock. */
  readonly socketDir: string;
  /** The jail's root, seen from the host. */
  readonly root: string;
}

function children(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
    .trim()
    .split(/\s+/)
    .filter((s) => s !== "")
    .map(Number);
}

export function jailView(slot: SatelliteSlot): JailView {
  const bwrapPid = slot.process?.pid;
  if (bwrapPid === undefined) throw new Error("the slot has no live process");
  // bwrap reads its options from fd 3, so its command line no longer names the host dir: ask the process.
  const socketDir = slot.process?.socketDir;
  if (socketDir == null) throw new Error("the satellite has no socket directory");
  const [initPid] = children(bwrapPid);
  if (initPid === undefined) throw new Error(`bwrap ${bwrapPid} has no child`);
  const [denoPid] = children(initPid);
  if (denoPid === undefined) throw new Error(`the jail's init ${initPid} has no child`);
  return { bwrapPid, initPid, denoPid, socketDir, root: `/proc/${denoPid}/root` };
}

/** Lines of /proc/<pid>/status as a map. */
export function procStatus(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, "utf8").split("\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) out[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return out;
}

/** Mount point → its mount options ("ro", "rw", …), from /proc/<pid>/mountinfo. */
export function mounts(pid: number): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of readFileSync(`/proc/${pid}/mountinfo`, "utf8").split("\n")) {
    const fields = line.split(" ");
    const point = fields[4];
    const options = fields[5];
    if (point !== undefined && options !== undefined) out.set(point, options.split(","));
  }
  return out;
}

export function namespace(pid: number | "self", kind: "net" | "pid" | "mnt" | "user" | "ipc" | "uts"): string {
  return readlinkSync(`/proc/${pid}/ns/${kind}`);
}

/** Every path under `dir` (relative), or [] when it does not exist. */
export function tree(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
  } catch {
    return [];
  }
}

/** Names in a directory, or null when it does not exist. */
export function listing(dir: string): string[] | null {
  try {
    return readdirSync(dir).sort();
  } catch {
    return null;
  }
}

/** Environment variable names of a process, from /proc/<pid>/environ. */
export function environKeys(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, "utf8")
    .split("\0")
    .filter((kv) => kv !== "")
    .map((kv) => kv.slice(0, kv.indexOf("=")))
    .sort();
}
