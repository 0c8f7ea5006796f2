/**
 * The environment at the edge: every `TETHER_*` variable the `tether` command
 * (and `tether serve`, `tether mcp`, the demo) honours, read once and checked
 * here, and turned into the broker's options. The library itself
 * (`Broker.open`, `Session`, the jail, the capabilities) never reads the
 * environment: it is told, and what it is not told takes the default an
 * embedder expects (see `BrokerOptions`).
 *
 * An empty variable counts as unset. A value outside what a variable accepts
 * is refused, naming the variable and what it takes, before anything runs.
 */
import { isAbsolute } from "node:path";
import * as v from "valibot";
import type { BrokerOptions } from "../broker.js";
import { xdgBundleCache } from "../install/bundle-cache.js";
import { CGROUP_MODES } from "../jail/cgroup-detect.js";
import { isJailId } from "../jail/identity.js";
import { LOG_LEVELS } from "../base/log.js";

/**
 * What the environment says: the broker's options (`logLevel` also for the
 * loggers the commands make), and the fleet's store and this host's name in
 * it, which the commands and `tether serve` join (broker/fleet.ts).
 */
export type EnvironmentOptions = Omit<BrokerOptions, "log"> & {
  readonly store?: string;
  readonly fleetHost?: string;
  readonly fleetLeaseMs?: number;
};

/** A variable holds a value it does not accept; the message names it and what it takes. */
export class EnvironmentError extends Error {
  constructor(readonly problems: ReadonlyArray<{ readonly variable: string; readonly message: string }>) {
    super(problems.map((p) => p.message).join("; "));
    this.name = "EnvironmentError";
  }
}

const jailId = (what: string) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, `expected the ${what} as a number (a positive uid/gid other than root)`),
    v.transform(Number),
    v.check(isJailId, `expected a positive ${what} other than root (0) and below 4294967295`),
  );

/** Each variable: what it accepts (said when it holds anything else), and the option it sets. */
const VARIABLES = {
  TETHER_HOME: { accepts: "a folder path (the broker's home; default ~/.tether)", schema: v.string(), option: "home" },
  TETHER_INSECURE_NO_SANDBOX: {
    accepts: "1 (run satellites without the OS sandbox: insecure) or 0",
    schema: v.pipe(
      v.picklist(["0", "1"]),
      v.transform((s) => (s === "1" ? ("none" as const) : undefined)),
    ),
    option: "sandbox",
  },
  TETHER_DENO: { accepts: "the path of a Deno binary", schema: v.string(), option: "deno" },
  TETHER_LOG: { accepts: LOG_LEVELS.join(", "), schema: v.picklist(LOG_LEVELS), option: "logLevel" },
  TETHER_JAIL_UID: { accepts: "a positive uid other than root", schema: jailId("uid"), option: "jailUid" },
  TETHER_JAIL_GID: { accepts: "a positive gid other than root", schema: jailId("gid"), option: "jailGid" },
  TETHER_JAIL_ROOT: { accepts: "a folder path", schema: v.string(), option: "jailRoot" },
  TETHER_CGROUP: { accepts: CGROUP_MODES.join(", "), schema: v.picklist(CGROUP_MODES), option: "cgroup" },
  TETHER_NATIVE_DIR: { accepts: "a folder path", schema: v.string(), option: "nativeDir" },
  TETHER_OPERATOR: { accepts: "a name", schema: v.string(), option: "operator" },
  TETHER_BUNDLE_CACHE: {
    accepts: "off (keep no bundles) or an absolute folder path (where bundles are kept)",
    schema: v.union([
      v.pipe(
        v.literal("off"),
        v.transform(() => false as const),
      ),
      v.pipe(v.string(), v.check(isAbsolute)),
    ]),
    option: "bundleCache",
  },
  TETHER_STORE: {
    accepts: "a PostgreSQL URL (postgres://role:password@host:5432/database)",
    schema: v.pipe(v.string(), v.regex(/^postgres(?:ql)?:\/\//)),
    option: "store",
  },
  TETHER_FLEET_HOST: {
    accepts: "a host name (letters, digits, '.', '-', '_')",
    schema: v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/)),
    option: "fleetHost",
  },
  TETHER_FLEET_LEASE_MS: {
    accepts: "a session lease's length in ms, 1000 to 600000 (default 15000)",
    schema: v.pipe(v.string(), v.regex(/^\d{4,6}$/), v.transform(Number), v.minValue(1000), v.maxValue(600_000)),
    option: "fleetLeaseMs",
  },
} as const satisfies Record<
  string,
  { accepts: string; schema: v.GenericSchema<string, unknown>; option: keyof EnvironmentOptions }
>;

/** The variables this module reads, for docs and tests. */
export const TETHER_VARIABLES = Object.keys(VARIABLES) as ReadonlyArray<keyof typeof VARIABLES>;

/**
 * Reads `env` (default this process's environment) once: the options it sets, or
 * an EnvironmentError naming every variable that holds a value it does not accept.
 * The approver's name falls back to `USER`, then `LOGNAME`, as a shell's would.
 */
export function readEnvironment(env: Readonly<Record<string, string | undefined>> = process.env): EnvironmentOptions {
  const options: Record<string, unknown> = {};
  const problems: Array<{ variable: string; message: string }> = [];
  for (const [variable, { accepts, schema, option }] of Object.entries(VARIABLES)) {
    const raw = env[variable];
    if (raw === undefined || raw === "") continue;
    const checked = v.safeParse(schema as v.GenericSchema<string, unknown>, raw);
    if (!checked.success) {
      problems.push({ variable, message: `${variable} must be ${accepts}, not '${raw}'` });
      continue;
    }
    if (checked.output !== undefined) options[option] = checked.output;
  }
  if (problems.length > 0) throw new EnvironmentError(problems);
  // The XDG base directory for caches, when TETHER_BUNDLE_CACHE does not say (a relative one is ignored, as XDG says).
  if (options.bundleCache === undefined && env.XDG_CACHE_HOME !== undefined && isAbsolute(env.XDG_CACHE_HOME))
    options.bundleCache = xdgBundleCache(env.XDG_CACHE_HOME);
  if (options.operator === undefined) {
    const fallback = env.USER || env.LOGNAME;
    if (fallback) options.operator = fallback;
  }
  return options as EnvironmentOptions;
}

/**
 * The demo's console (`make demo CONSOLE=1`, broker/demo/console.ts): how long it
 * stays up, from TETHER_DEMO_CONSOLE_MS (milliseconds, 0 or more); undefined when
 * unset (the demo's default applies). Not a broker option: only the demo reads it.
 */
export function readDemoConsoleMs(env: Readonly<Record<string, string | undefined>> = process.env): number | undefined {
  const raw = env.TETHER_DEMO_CONSOLE_MS;
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d{1,9}$/.test(raw))
    throw new EnvironmentError([
      {
        variable: "TETHER_DEMO_CONSOLE_MS",
        message: `TETHER_DEMO_CONSOLE_MS must be a number of milliseconds (0 or more), not '${raw}'`,
      },
    ]);
  return Number(raw);
}
