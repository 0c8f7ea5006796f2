/**
 * Which broker process wrote a row or a file: "pid:starttime" (the start time
 * defeats pid reuse), and whether that process is still alive.
 */
import { readFileSync } from "node:fs";

/** "pid:starttime" of a process, or null when it is gone. */
export function processIdentity(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return `${pid}:${fields[19] ?? "?"}`;
  } catch {
    return null;
  }
}

/** Whether the process named by `owner` ("pid:starttime") is still alive. */
export function ownerAlive(owner: string | null): boolean {
  if (owner === null) return false;
  const pid = Number(owner.split(":")[0]);
  return Number.isInteger(pid) && pid > 0 && processIdentity(pid) === owner;
}

/** This process. */
export const SELF = processIdentity(process.pid) ?? `${process.pid}:?`;
