/**
 * Where the Deno binary is: the path the broker was given (its `deno` option),
 * else the one the `deno` npm package ships (its postinstall script puts it
 * beside its package.json).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { BrokerCode, TetherError } from "../base/errors.js";

/** The Deno binary: `explicit` when given (it must exist), else the `deno` package's. */
export function denoBinary(explicit?: string): string {
  if (explicit !== undefined && explicit !== "") {
    if (!existsSync(explicit))
      throw new TetherError(
        BrokerCode.denoUnavailable,
        `The Deno binary the broker was given (${explicit}; TETHER_DENO for the tether command) does not exist`,
      );
    return explicit;
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
    throw new TetherError(
      BrokerCode.denoUnavailable,
      `No Deno binary at ${binary}: the 'deno' package's postinstall ` +
        `did not run (allow its install script and run 'npm ci')`,
    );
  }
  return binary;
}
