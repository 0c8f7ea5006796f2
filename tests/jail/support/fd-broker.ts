/**
 * A broker started the way a careless parent would start one: with extra
 * descriptors open and inheritable (passed by tests/jail/descriptors.test.ts
 * at numbers above a gap, which Node's own startup does not mark
 * close-on-exec). It boots one jailed satellite of the fd-probe fixture, has
 * it probe every descriptor, and prints one JSON line: what the probe could
 * use, what this process holds at the planted numbers, and every descriptor
 * each process of the jail holds, as the host sees them.
 *
 *   node --import tsx tests/jail/support/fd-broker.ts <first planted fd> <last planted fd> <marker>
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { processTree } from "../../../broker/satellite/memory-watch.js";
import { bundleToTemp, slotFor } from "../../support/satellites.js";

/**
 * The probe uses what it adopts (reads, writes, listens): below this number are Deno's
 * own descriptors and its channel to the broker, which it would break. Those are judged
 * from the host instead (every descriptor of every jailed process, by what it points to).
 */
export const PROBE_FROM = 64;

const [first, last, marker] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] ?? "marker"];

function target(pid: number | "self", fd: number | string): string | null {
  try {
    return readlinkSync(`/proc/${pid}/fd/${fd}`);
  } catch {
    return null;
  }
}

const planted: Record<number, string | null> = {};
for (let fd = first; fd <= last; fd++) planted[fd] = target("self", fd);

const bundled = await bundleToTemp("tests/jail/fixtures/fd-probe");
const slot = slotFor(bundled);
try {
  const limit = Number(/Max open files\s+(\d+)/.exec(readFileSync("/proc/self/limits", "utf8"))?.[1] ?? 1024);
  const outcome = await slot.invoke({
    kind: "tool",
    name: "probe",
    args: JSON.stringify({ from: PROBE_FROM, to: Math.min(limit, 4096) - 1, marker }),
    strand: "fd",
    deadlineMs: 20_000,
  });
  // What every process of the jail holds (bwrap, its init, Deno and Deno's threads share a table).
  const jail: Record<string, Record<string, string | null>> = {};
  for (const pid of processTree(slot.process!.pid!)) {
    const fds: Record<string, string | null> = {};
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) fds[fd] = target(pid, fd);
    } catch {
      continue;
    }
    const comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    jail[`${pid} ${comm}`] = fds;
  }
  process.stdout.write(`${JSON.stringify({ planted, outcome, jail })}\n`);
} finally {
  await slot.destroy("done");
  bundled.cleanup();
}
