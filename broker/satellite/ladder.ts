/**
 * The shutdown ladder: stdin EOF, then SIGTERM, then SIGKILL, each after a
 * bounded wait for the process to exit.
 */
import type { JailedChild } from "../jail/spawn.js";
import type { Logger } from "../base/log.js";

/** Walks the ladder until `exited` settles; resolves once it has. */
export async function walkShutdownLadder(
  child: JailedChild,
  exited: Promise<void>,
  stepMs: number,
  log: Logger,
): Promise<void> {
  const exitedWithin = (ms: number) =>
    Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
  child.stdin?.end();
  if (await exitedWithin(stepMs)) return;
  log.debug("satellite ignored stdin EOF; sending SIGTERM");
  child.kill("SIGTERM");
  if (await exitedWithin(stepMs)) return;
  log.warn("satellite ignored SIGTERM; sending SIGKILL");
  child.kill("SIGKILL");
  await exited;
}
