/**
 * Test support: hosts of a fleet as real processes — `tether` commands and
 * `tether serve` run from bin/tether.js with a home, the fleet's store
 * (`TETHER_STORE`) and a host name of their own — and a JSON-RPC client of a
 * serving host's WebSocket.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { WebSocket } from "ws";
import { REPO } from "./satellites.js";
import { until } from "./wait.js";
import { provisionOperatorKey } from "./operator-key.js";

const BIN = join(REPO, "bin", "tether.js");

/** What a finished command printed, and its exit code. */
export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A fleet host's environment: its home, the store, its name, its operator (`op-<host>`). */
export const fleetEnv = (store: string, host: string, dir: string): NodeJS.ProcessEnv => ({
  ...process.env,
  // Every home of the test's fleet signs with, and trusts, one operator key.
  TETHER_HOME: provisionOperatorKey(dir),
  TETHER_STORE: store,
  TETHER_FLEET_HOST: host,
  TETHER_OPERATOR: `op-${host}`,
});

/** Runs `tether <args>` as host `host` of the fleet at `store`. */
export function runTether(store: string, host: string, dir: string, ...args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: REPO, env: fleetEnv(store, host, dir), timeout: 120_000 },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, stdout, stderr });
      },
    );
  });
}

/** A `tether serve` that started as a host of the fleet. */
export interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly token: string;
  /** The host name and the store it said it serves (the store shown without its password). */
  readonly host: string;
  readonly shownStore: string;
  err(): string;
}

/** The processes a test file started: stopped (SIGTERM, waited for) by `stopAll`. */
export class Children {
  readonly #children: ChildProcess[] = [];

  add(child: ChildProcess): ChildProcess {
    this.#children.push(child);
    return child;
  }

  async stopAll(): Promise<void> {
    for (const child of this.#children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
    }
  }
}

const serveArgs = [BIN, "serve", "--port", "0"];

/** Starts `tether serve` as host `host`, once it says it listens as a host of the fleet. */
export async function startServe(
  children: Children,
  store: string,
  host: string,
  dir: string,
  env: Record<string, string> = {},
): Promise<Served> {
  const child = children.add(
    spawn(process.execPath, serveArgs, {
      cwd: REPO,
      env: { ...fleetEnv(store, host, dir), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  await until(
    `tether serve on host ${host} to start`,
    () => /listening on/.test(out) || child.exitCode !== null,
    60_000,
  );
  const line = /^tether serve: listening on (\S+) \(token file: (.+)\) as host (\S+) of the fleet at (\S+)$/m.exec(out);
  if (line === null) throw new Error(`tether serve did not start as a fleet host:\n${out}\n${err}`);
  return {
    url: line[1]!,
    token: readFileSync(line[2]!, "utf8").trim(),
    host: line[3]!,
    shownStore: line[4]!,
    err: () => err,
    child,
  };
}

/** Runs `tether serve` expecting it to refuse to start: its exit code and what it printed (one that starts after all is stopped). */
export function serveRefused(children: Children, store: string, host: string, dir: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = children.add(
      spawn(process.execPath, serveArgs, {
        cwd: REPO,
        env: fleetEnv(store, host, dir),
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on("data", () => /listening on/.test(stdout) && child.kill("SIGTERM"));
    child.once("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Message = any;

/** A JSON-RPC 2.0 client of a serving host. */
export interface FleetClient {
  call(method: string, params: unknown): Promise<Message>;
  /** Sends without waiting; the answer is `answer(id)`. */
  start(method: string, params: unknown): number;
  answer(id: number): Promise<Message>;
  readonly received: Message[];
  close(): void;
}

export async function connectServe(served: Served): Promise<FleetClient> {
  const ws = new WebSocket(served.url, { headers: { Authorization: `Bearer ${served.token}` } });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const received: Message[] = [];
  ws.on("message", (data: Buffer) => received.push(JSON.parse(data.toString("utf8"))));
  ws.on("error", () => {}); // a server killed under it
  let next = 0;
  const start = (method: string, params: unknown): number => {
    const id = ++next;
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return id;
  };
  const answer = async (id: number): Promise<Message> => {
    await until(`the answer to request ${id}`, () => received.some((m) => m.id === id), 60_000);
    return received.find((m) => m.id === id);
  };
  return { call: (method, params) => answer(start(method, params)), start, answer, received, close: () => ws.close() };
}
