/** The broker's home folder: the one given (the tether command's `--home` or `TETHER_HOME`), else `~/.tether`. */
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export function resolveHome(explicit?: string): string {
  return resolve(explicit ?? join(homedir(), ".tether"));
}

/** Creates the home (mode 0700) and its artifact folder; returns their paths. */
export function prepareHome(home: string): { home: string; artifacts: string; db: string } {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const artifacts = join(home, "artifacts");
  mkdirSync(artifacts, { recursive: true, mode: 0o700 });
  return { home, artifacts, db: join(home, "tether.db") };
}
