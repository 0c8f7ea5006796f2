/**
 * Jest globalSetup of the whole run (jest.config.js; its teardown is
 * bundle-cache-global-teardown.mjs): one fresh bundle cache
 * (broker/install/bundle-cache.ts) for this run, in TETHER_BUNDLE_CACHE, which
 * the workers inherit; the tests' brokers take it from the environment
 * (tests/support/env-options.ts), their spawned `tether` commands from theirs.
 * The tests that install the same folder share a bundle, as an operator's
 * `tether check` then `tether install` do; each run still bundles every
 * distinct folder once in the real jail, so a change to the jail or the
 * bundler is exercised rather than answered by a bundle an earlier run kept.
 * A run given TETHER_BUNDLE_CACHE (`off`, say) keeps it.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export default function globalSetup() {
  if (process.env.TETHER_BUNDLE_CACHE !== undefined) return;
  const dir = mkdtempSync(join(tmpdir(), "tether-test-bundles-"));
  globalThis[Symbol.for("tether.test.bundleCache")] = dir;
  process.env.TETHER_BUNDLE_CACHE = dir;
}
