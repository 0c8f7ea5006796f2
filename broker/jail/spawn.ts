/**
 * Starts a launch (see sandbox.ts): the launcher gets exactly stdin, stdout,
 * stderr, bwrap's options on descriptor 3 and the passed files after it; it
 * closes everything else before bwrap runs.
 *
 * Node's own spawn, not execa: every satellite and host job starts here, and
 * execa cost a broker process ~50 ms to load and ~10 ms more on its first
 * spawn, on the path to a command's first answer. A broker that exits kills
 * what it started, detached satellites included (`process.on("exit")`; execa's
 * `cleanup` spared detached children, and also ran on SIGHUP, SIGINT and
 * SIGTERM, which the commands handle themselves). A broker that dies by a
 * signal leaves its jails to bwrap's --die-with-parent and to their stdin's
 * end of file.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Launch } from "./sandbox.js";

export interface SpawnOptions {
  /** Its own process group (see SatelliteProcess): a signal to the broker's group does not reach it. */
  readonly detached?: boolean;
}

/** How a jailed process ended: its exit code, or the signal that ended it. */
export interface JailedExit {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * A started launch: the process, and `exited`, settled once it ended and its output was read.
 * Nothing reads stdout and stderr for the caller (execa drained what nobody read): read them
 * or `resume()` them, or a child that writes more than a pipe holds blocks for ever.
 */
export type JailedChild = ChildProcess & {
  /** Resolves once the process exited and its stdout and stderr closed; rejects only when it could not start. */
  readonly exited: Promise<JailedExit>;
};

/** What this process started and has not seen end: killed if the broker exits first. */
const running = new Set<ChildProcess>();
let killOnExit = false;

function watchExit(): void {
  if (killOnExit) return;
  killOnExit = true;
  process.on("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

export function spawnJailed(launch: Launch, options: SpawnOptions = {}): JailedChild {
  watchExit();
  // Opened for the spawn only: the child inherits them, bwrap copies them into the jail.
  const fds = launch.files.map((file) => openSync(file, "r"));
  let child: ChildProcess;
  try {
    child = spawn(launch.file, [...launch.args], {
      env: launch.env,
      // A number is a descriptor of ours the child inherits at that position.
      stdio: launch.bwrapOptions === null ? ["pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", "pipe", ...fds],
      detached: options.detached ?? false,
    });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  const exited = new Promise<JailedExit>((resolve, reject) => {
    // `close` comes after `exit`, once stdout and stderr have ended: what it wrote has been read.
    child.once("close", (code, signal) => {
      running.delete(child);
      resolve({ exitCode: code, signal });
    });
    // A process that never started (no such file, no permission) has no pid; its `close` comes after.
    // `on`: a later error (a failed kill) must not be thrown for want of a listener.
    child.on("error", (err) => {
      if (child.pid === undefined) reject(err);
    });
  });
  if (child.pid !== undefined) running.add(child);
  if (launch.bwrapOptions !== null) {
    const optionsPipe = child.stdio[3] as NodeJS.WritableStream | undefined;
    optionsPipe?.on("error", () => {});
    optionsPipe?.end(launch.bwrapOptions.map((a) => `${a}\0`).join(""));
  }
  return Object.assign(child, { exited });
}
