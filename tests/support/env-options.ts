/**
 * Test support: what the environment the test runner was given says, as the
 * library's options. The library reads no environment; the `tether` command
 * reads it at its edge (broker/cli/environment.ts). Tests that spawn the CLI
 * pass the variables on; tests that use the library in-process take the same
 * effect from here, read through the same edge module — so a run with
 * TETHER_INSECURE_NO_SANDBOX=1, TETHER_DENO, TETHER_JAIL_UID/GID/ROOT,
 * TETHER_CGROUP or TETHER_NATIVE_DIR set (and `make test`'s unprivileged rerun,
 * tests/support/jail-unprivileged.sh) jails in-process satellites exactly as
 * the CLI's.
 */
import type { BrokerOptions } from "../../broker/broker.js";
import { readEnvironment, type EnvironmentOptions } from "../../broker/cli/environment.js";
import { jailIdentity, type JailIdentity } from "../../broker/jail/identity.js";
import { resolveSandbox, type SandboxMode } from "../../broker/jail/sandbox.js";
import { jailSetup, type JailSetup } from "../../broker/jail/setup.js";

let read: Omit<EnvironmentOptions, "home"> | undefined;

/**
 * The broker options this environment sets, read once. Never the home: a test
 * names its own, and a developer's TETHER_HOME must not be touched by a test.
 */
export function envOptions(): Omit<BrokerOptions, "log" | "home"> {
  if (read === undefined) {
    const { home: _home, ...rest } = readEnvironment(process.env);
    read = rest;
  }
  return read;
}

/** This run's bundle cache (tests/support/bundle-cache-global-setup.mjs), as the option a job setup takes. */
export function envBundleCache(): { bundleCache?: string | false } {
  const cache = envOptions().bundleCache;
  return cache !== undefined ? { bundleCache: cache } : {};
}

/** The jail setup those options describe (Deno's path, the jail uid and root, cgroups, the native folder). */
export function envJail(): JailSetup {
  return jailSetup(envOptions());
}

/** The jail identity under those options: null when the tests do not run as root. */
export function envJailIdentity(): JailIdentity | null {
  return jailIdentity(envJail().identity);
}

/** The sandbox those options ask for, as the broker resolves it (bwrap unless TETHER_INSECURE_NO_SANDBOX=1). */
export function envSandbox(): SandboxMode {
  return resolveSandbox(envOptions().sandbox);
}

/** The variables that say how a spawned `tether` jails and runs; never its home, store or fleet. */
const PASSED = [
  "TETHER_INSECURE_NO_SANDBOX",
  "TETHER_DENO",
  "TETHER_LOG",
  "TETHER_JAIL_UID",
  "TETHER_JAIL_GID",
  "TETHER_JAIL_ROOT",
  "TETHER_CGROUP",
  "TETHER_NATIVE_DIR",
  // This run's bundle cache (tests/support/bundle-cache-global-setup.mjs).
  "TETHER_BUNDLE_CACHE",
  // bin/tether.js: the compiled command (`make test` builds it first) rather than the sources through tsx.
  "TETHER_FROM_DIST",
] as const;

/**
 * For a `tether` spawned with an environment of its own (an MCP client's
 * transport, a harness, a newcomer's shell): what this run's environment says
 * of how it jails and which build runs — so those spawns run as the others do.
 */
export function passedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of PASSED) {
    const value = process.env[key];
    if (value !== undefined && value !== "") env[key] = value;
  }
  return env;
}
