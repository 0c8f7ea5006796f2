/**
 * Third-party tools the tests drive for real (the MCP conformance suite, …),
 * each pinned with its own package.json and package-lock.json under
 * tests/third-party/<name>/ and installed there with `npm ci` the first time a
 * test needs it (again only when its lock file changes).
 */
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "./satellites.js";

/** The folder of third-party package set `name`, installed. */
export function thirdParty(name: string): string {
  const dir = join(REPO, "tests", "third-party", name);
  const lock = join(dir, "package-lock.json");
  const installed = join(dir, "node_modules", ".package-lock.json");
  if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  }
  return dir;
}
