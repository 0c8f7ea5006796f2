/**
 * The operator's policy (`$TETHER_HOME/policy.toml`) and a session's policy.
 * Read at dispatch: the operator file is re-read when it changes on disk.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import * as v from "valibot";
import { isMetadataAddress, NO_REACH, REACH_CLASSES, reachOf, type Reach } from "../egress/reach.js";
import { parseRule, type EgressRule } from "../egress/rules.js";

const reachClass = v.picklist(
  REACH_CLASSES,
  `must be one of ${REACH_CLASSES.map((c) => `"${c}"`).join(", ")} (metadata addresses are listed one by one ` +
    `in [net] metadata; unspecified addresses are never reachable)`,
);

const metadataAddress = v.pipe(
  v.string(),
  v.check(
    isMetadataAddress,
    'must be a cloud metadata address, written as one address (e.g. "169.254.169.254"); other non-public ' +
      "addresses are switched on by class in [net] reach",
  ),
);

export const OperatorPolicyFile = v.strictObject({
  net: v.optional(
    v.strictObject({
      /** Rules refused whatever an approval says (wildcards may be broad here). */
      deny: v.optional(v.array(v.string()), []),
      /** Non-public address classes a rule naming them may reach. */
      reach: v.optional(v.array(reachClass), []),
      /** Cloud metadata addresses a rule naming them may reach, one by one. */
      metadata: v.optional(v.array(metadataAddress), []),
      /** Shorthand: reach = ["loopback", "private", "link_local", "cgnat"] (never metadata). */
      allow_private: v.optional(v.boolean(), false),
      /** Largest response body a satellite may receive. */
      max_body_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 10 * 1024 * 1024),
      /** Ceiling on an extension's `[limits] fetches` (fetches one invocation may have in flight). */
      max_fetches: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64)), 16),
      /** Largest request body an extension may send. */
      max_request_bytes: v.optional(
        v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(16 * 1024 * 1024)),
        4 * 1024 * 1024,
      ),
      /** Redirects followed at most. */
      max_redirects: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(20)), 5),
    }),
    {},
  ),
  satellites: v.optional(
    v.strictObject({
      /** Ceiling on an extension's `[limits] concurrency` (satellites one session runs of it at once). */
      max_concurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16)), 4),
      /**
       * What one extension's satellites in one session may add up to: a pool grows only while
       * (size + 1) × memory_mb fits.
       */
      max_pool_memory_mb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16), v.maxValue(65_536)), 1024),
    }),
    {},
  ),
  fleet: v.optional(
    v.strictObject({
      /**
       * How long a fleet's host may go without hearing the fleet's store before it refuses calls
       * (docs/fleet.md#bounded-staleness).
       */
      max_staleness_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1_000), v.maxValue(600_000)), 10_000),
    }),
    {},
  ),
});

export interface OperatorPolicy {
  readonly deny: readonly EgressRule[];
  readonly reach: Reach;
  readonly maxBodyBytes: number;
  readonly maxRedirects: number;
  readonly maxRequestBytes: number;
  readonly maxFetches: number;
  readonly maxConcurrency: number;
  readonly maxPoolMemoryMb: number;
  /** A fleet's host refuses calls once it has not heard the fleet's store for this long. */
  readonly maxStalenessMs: number;
}

export interface SessionPolicy {
  /** No egress at all. */
  readonly offline?: boolean;
  /** A narrower allow list, in rule syntax. */
  readonly allow?: readonly string[];
}

const DEFAULTS: OperatorPolicy = {
  deny: [],
  reach: NO_REACH,
  maxBodyBytes: 10 * 1024 * 1024,
  maxRedirects: 5,
  maxRequestBytes: 4 * 1024 * 1024,
  maxFetches: 16,
  maxConcurrency: 4,
  maxPoolMemoryMb: 1024,
  maxStalenessMs: 10_000,
};

/** The keys each table takes, for a message about one it does not. */
const TABLES: Readonly<Record<string, readonly string[]>> = {
  "": Object.keys(OperatorPolicyFile.entries),
  net: Object.keys(OperatorPolicyFile.entries.net.wrapped.entries),
  satellites: Object.keys(OperatorPolicyFile.entries.satellites.wrapped.entries),
  fleet: Object.keys(OperatorPolicyFile.entries.fleet.wrapped.entries),
};

/** One problem of the file: the key's path and what is wrong; an unknown key lists those its table takes. */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue) ?? "(top level)";
  if (issue.kind === "schema" && issue.expected === "never") {
    const table = path.includes(".") ? path.slice(0, path.lastIndexOf(".")) : "";
    const keys = TABLES[table] ?? [];
    return table === ""
      ? `[${path}]: unknown table; policy.toml has ${keys.map((k) => `[${k}]`).join(", ")}`
      : `${path}: unknown key; [${table}] takes ${keys.join(", ")}`;
  }
  return `${path}: ${issue.message}`;
}

export function parseOperatorPolicy(text: string, file: string): OperatorPolicy {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    const where = err instanceof TomlError ? ` (line ${err.line}, column ${err.column})` : "";
    throw new Error(`${file}${where}: not valid TOML: ${(err as Error).message.split("\n")[0]}`);
  }
  const parsed = v.safeParse(OperatorPolicyFile, raw, { abortEarly: false });
  if (!parsed.success) throw new Error(`${file}: ${parsed.issues.map(describeIssue).join("; ")}`);
  const net = parsed.output.net;
  return {
    deny: (net.deny ?? []).map((r, i) => {
      try {
        return parseRule(r, { allowBroad: true });
      } catch (err) {
        throw new Error(`${file}: net.deny.${i}: ${(err as Error).message}`);
      }
    }),
    reach: reachOf(net.reach ?? [], net.metadata ?? [], net.allow_private ?? false),
    maxBodyBytes: net.max_body_bytes ?? DEFAULTS.maxBodyBytes,
    maxRedirects: net.max_redirects ?? DEFAULTS.maxRedirects,
    maxRequestBytes: net.max_request_bytes ?? DEFAULTS.maxRequestBytes,
    maxFetches: net.max_fetches ?? DEFAULTS.maxFetches,
    maxConcurrency: parsed.output.satellites.max_concurrency ?? DEFAULTS.maxConcurrency,
    maxPoolMemoryMb: parsed.output.satellites.max_pool_memory_mb ?? DEFAULTS.maxPoolMemoryMb,
    maxStalenessMs: parsed.output.fleet.max_staleness_ms ?? DEFAULTS.maxStalenessMs,
  };
}

/** Reads the operator policy, caching it until the file's mtime changes. A broken file denies all egress. */
export class OperatorPolicySource {
  readonly #file: string;
  #mtime = -1;
  #policy: OperatorPolicy | Error = DEFAULTS;

  constructor(home: string) {
    this.#file = join(home, "policy.toml");
  }

  get file(): string {
    return this.#file;
  }

  current(): OperatorPolicy | Error {
    let mtime: number;
    try {
      mtime = statSync(this.#file).mtimeMs;
    } catch {
      this.#mtime = -1;
      return (this.#policy = DEFAULTS);
    }
    if (mtime !== this.#mtime) {
      this.#mtime = mtime;
      try {
        this.#policy = parseOperatorPolicy(readFileSync(this.#file, "utf8"), this.#file);
      } catch (err) {
        this.#policy = err as Error;
      }
    }
    return this.#policy;
  }
}
