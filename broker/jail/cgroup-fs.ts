/**
 * Small file and naming helpers shared by the cgroup files: reading and writing
 * cgroup files without throwing where a missing file is an answer, and the
 * names of this broker's groups.
 */
import { readFileSync, rmdirSync, writeFileSync } from "node:fs";

/** This broker's group in each hierarchy: `tether-<broker pid>`. */
export const parentName = (): string => `tether-${process.pid}`;

export function readText(file: string): string {
  return readFileSync(file, "utf8").trim();
}

export function readNumber(file: string): number {
  return Number(readText(file));
}

/**
 * The number after `key` in a "key value" per line file
 * (memory.events, cpu.stat, memory.oom_control); 0 when absent.
 */
export function keyed(file: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, "m").exec(readText(file));
  return m ? Number(m[1]) : 0;
}

export function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

export function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not there, or not empty
  }
}

export function unique(dirs: string[]): string[] {
  return [...new Set(dirs)];
}

export function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10).padEnd(8, "0");
}

export function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}
