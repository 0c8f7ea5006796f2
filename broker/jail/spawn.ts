/**
 * Starts a launch (see sandbox.ts): the launcher gets exactly stdin, stdout,
 * stderr, bwrap's options on descriptor 3 and the passed files after it; it
 * closes everything else before bwrap runs.
 */
import { closeSync, openSync } from "node:fs";
import { execa, type ResultPromise } from "execa";
import type { Launch } from "./sandbox.js";

export interface SpawnOptions {
  /** Its own process group (see SatelliteProcess): a signal to the broker's group does not reach it. */
  readonly detached?: boolean;
}

type Stdio = ["pipe", "pipe", "pipe", ...Array<"pipe" | number>];

export function spawnJailed(
  launch: Launch,
  options: SpawnOptions = {},
): ResultPromise<{ buffer: false; encoding: "buffer" }> {
  // Opened for the spawn only: the child inherits them, bwrap copies them into the jail.
  const fds = launch.files.map((file) => openSync(file, "r"));
  let child: ResultPromise<{ buffer: false; encoding: "buffer" }>;
  try {
    const stdio: Stdio =
      launch.bwrapOptions === null ? ["pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", "pipe", ...fds];
    child = execa(launch.file, [...launch.args], {
      env: launch.env,
      extendEnv: false,
      // A number in stdio is a descriptor of ours the child inherits (execa's types list only 3–9;
      // its runtime, like Node's spawn, takes any).
      stdio: stdio as unknown as ["pipe", "pipe", "pipe"],
      buffer: false,
      reject: false,
      cleanup: true,
      detached: options.detached ?? false,
      forceKillAfterDelay: false,
      encoding: "buffer",
    }) as ResultPromise<{ buffer: false; encoding: "buffer" }>;
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  if (launch.bwrapOptions !== null) {
    const optionsPipe = child.stdio[3] as NodeJS.WritableStream | undefined;
    optionsPipe?.on("error", () => {});
    optionsPipe?.end(launch.bwrapOptions.map((a) => `${a}\0`).join(""));
  }
  return child;
}
