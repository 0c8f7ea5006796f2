/**
 * Where the Deno binary is: `TETHER_DENO` if set, else the one the `deno` npm
 * package ships (its postinstall script puts it beside its package.json).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { BrokerCode, TetherError } from "../errors.js";

let cached: string | undefined;

export function denoBinary(): string {
  if (cached !== undefined) return cached;
  const fromEnv = process.env.TETHER_DENO;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new TetherError(BrokerCode.denoUnavailable, `TETHER_DENO names ${fromEnv}, which does not exist`);
    return (cached = fromEnv);
  }
  const require = createRequire(import.meta.url);
  let pkg: string;
  try {
    pkg = require.resolve("deno/package.json");
  } catch {
    throw new TetherError(BrokerCode.denoUnavailable, "The 'deno' npm package is not installed; run 'npm ci'");
  }
  const binary = join(dirname(pkg), "deno");
  if (!existsSync(binary)) {
    throw new TetherError(BrokerCode.denoUnavailable, `No Deno binary at ${binary}: the 'deno' package's postinstall did not run (allow its install script and run 'npm ci')`);
  }
  return (cached = binary);
}
