/**
 * The first steps of a boot: the socket a satellite connects to (exactly one
 * connection), and the command that launches it in its jail.
 */
import { createServer, type Server, type Socket } from "node:net";
import { denoBinary } from "../jail/deno-binary.js";
import type { JailIdentity } from "../jail/identity.js";
import { launchCommand, type Launch, type LaunchSpec } from "../jail/sandbox.js";
import { seccompFilter } from "../jail/seccomp.js";
import type { SatelliteSpec } from "./spec.js";

/**
 * Listens at `socketPath` for exactly one connection: `connected` settles with it; `listening` once
 * the socket exists.
 */
export function listenForOne(socketPath: string): {
  readonly server: Server;
  readonly connected: Promise<Socket>;
  readonly listening: Promise<void>;
} {
  const server = createServer({ allowHalfOpen: false });
  const connected = new Promise<Socket>((resolve, reject) => {
    server.maxConnections = 1;
    server.once("connection", (socket) => {
      // Exactly one connection: stop listening before anything else can connect.
      server.close();
      resolve(socket);
    });
    server.once("error", reject);
    server.listen(socketPath);
  });
  const listening = new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return { server, connected, listening };
}

/** How to launch the satellite `spec` describes, its socket in `dir`. */
export function satelliteLaunch(
  spec: SatelliteSpec,
  dir: string,
  denoCache: LaunchSpec["denoCache"],
  identity: JailIdentity | null,
  cgroupProcs: readonly string[],
): Launch {
  return launchCommand({
    sandbox: spec.sandbox,
    deno: denoBinary(spec.jail?.deno),
    artifact: spec.artifact,
    socketDir: dir,
    memoryMb: spec.memoryMb,
    denoCache,
    identity,
    cgroupProcs,
    // Compiled once per machine; a host without libseccomp refuses to boot, saying what to install.
    seccomp: spec.sandbox === "bwrap" ? seccompFilter(spec.jail?.nativeDir) : null,
    ...(spec.jail?.nativeDir !== undefined ? { nativeDir: spec.jail.nativeDir } : {}),
  });
}

/**
 * The two ways a boot fails while waiting: the process exits first, or the
 * time runs out. Both reject with the error made when it happens (so it can
 * name the exit and the stderr tail); `clear` ends the race.
 */
export function bootRace(
  exited: Promise<void>,
  ms: number,
  whenExited: () => Error,
  whenLate: () => Error,
): { exitedEarly: Promise<never>; timedOut: Promise<never>; clear(): void } {
  const exitedEarly = exited.then(() => {
    throw whenExited();
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(whenLate()), ms);
  });
  return {
    exitedEarly,
    timedOut,
    clear: () => {
      clearTimeout(timer);
      exitedEarly.catch(() => {});
    },
  };
}
