/**
 * The extension manifest (`manifest.toml`), defined once as a valibot schema.
 * Every error names the file, the field path and what was expected.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { dirname, join } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import * as v from "valibot";
import { BrokerCode, TetherError } from "../base/errors.js";
import { MAX_OPEN_INVOCATIONS } from "../../jail-runtime/wire/frames.js";
import { OBSERVED_KINDS } from "../../jail-runtime/wire/session-kinds.js";
import { DEFAULT_SERVICE_BODY_BYTES, MAX_SERVICE_BODY_BYTES } from "../../jail-runtime/wire/service-kinds.js";
import { HookRow } from "./hook-row.js";
import { SecretRow, secretProblems } from "./secret-row.js";
import { LoginRow, endpointProblem, endpointsOf, originsOf } from "./login-row.js";
import { MAX_KIND_ROWS, type KindSections, type ManifestKinds } from "./kind-section.js";
import { RouteResource, routeResourceProblems } from "./route-resource.js";
import { CapabilitiesTable, SearchRow } from "./search-row.js";
import { ActRows, checkActRows } from "./act-row.js";
import { ModelTable, modelTableProblems } from "./model-table.js";

const Identifier = v.pipe(
  v.string(),
  v.regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "expected a lowercase name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
  ),
);
const ToolName = v.pipe(
  v.string(),
  v.regex(
    /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/,
    "expected a tool name (letters, digits, _ . -, at most 64, starting with a letter)",
  ),
);

export const ToolRow = v.strictObject({
  name: ToolName,
  description: v.pipe(v.string(), v.maxLength(4096)),
  parameters: v.optional(v.record(v.string(), v.unknown()), { type: "object" }),
  deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3_600_000))),
});

export { HookRow } from "./hook-row.js";
export { LoginRow } from "./login-row.js";

/**
 * One named argument of a command (an MCP prompt's argument): the command's
 * text is the given values, in this order, separated by spaces — what a user
 * types after `/name`. `choices` are what completion offers.
 */
export const CommandArgument = v.strictObject({
  name: v.pipe(
    v.string(),
    v.regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, "expected an argument name (letters, digits, _ and -, at most 64)"),
  ),
  description: v.optional(v.pipe(v.string(), v.maxLength(1024))),
  required: v.optional(v.boolean(), false),
  choices: v.optional(v.pipe(v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(256))), v.maxLength(100)), []),
});

export const CommandRow = v.strictObject({
  name: Identifier,
  description: v.pipe(v.string(), v.maxLength(4096)),
  arguments: v.optional(v.pipe(v.array(CommandArgument), v.maxLength(16)), []),
});

const Deadline = v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3_600_000)));

/** A named session-facing contribution: a `[[context]]` loader, a `[[route]]`, a `[[compaction]]` strategy. */
export const ContributionRow = v.strictObject({
  name: Identifier,
  description: v.pipe(v.string(), v.maxLength(4096)),
  /** Its time limit (never more than `[limits] deadline_ms`). */
  deadline_ms: Deadline,
});

/** A `[[route]]`: a contribution the harness calls; `resource` also serves it to MCP clients (./route-resource.ts). */
export const RouteRow = v.strictObject({
  ...ContributionRow.entries,
  resource: v.optional(RouteResource),
});

/** `[managed]`: prepared per session at activation, closed when the session lets it go. */
export const ManagedTable = v.strictObject({
  prepare_deadline_ms: Deadline,
  close_deadline_ms: Deadline,
});

/** `[init]`: the module exports `init`, run once per approved version (docs/initializers.md). */
export const InitTable = v.strictObject({
  /** Its time limit (default 10 s, never more than `[limits] deadline_ms`). */
  deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3_600_000)), 10_000),
});

/** `[observe]`: which of the session's events it is told about. */
export const ObserveTable = v.strictObject({
  events: v.pipe(
    v.array(v.picklist(OBSERVED_KINDS)),
    v.minLength(1, `expected at least one of: ${OBSERVED_KINDS.join(", ")}`),
  ),
});

/** One model of a `[[provider]]`: catalog data, shown at review and served to harnesses. */
export const ProviderModel = v.strictObject({
  id: v.pipe(
    v.string(),
    v.regex(
      /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/,
      "expected a model id (letters, digits, . _ : / @ -, at most 128, starting with a letter or digit)",
    ),
  ),
  context_window: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000_000)),
  /** US dollars per million tokens; 0 for a free or local model. */
  input_price_per_mtok: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1_000_000)), 0),
  output_price_per_mtok: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1_000_000)), 0),
  capabilities: v.optional(
    v.pipe(
      v.array(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,31}$/, "expected a capability word (a-z, 0-9, _ and -)"))),
      v.maxLength(32),
    ),
    [],
  ),
});

/** A `[[service]]`: HTTP routes `tether serve` mounts under `/ext/<extension>/` (docs/services.md). */
export const ServiceRow = v.strictObject({
  name: Identifier,
  description: v.pipe(v.string(), v.maxLength(4096)),
  methods: v.pipe(
    v.array(v.picklist(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])),
    v.minLength(1, "expected at least one method"),
    v.maxLength(6),
  ),
  /** Under `/ext/<extension>`: an exact path, or a prefix ending in `/*`. */
  path: v.pipe(
    v.string(),
    v.maxLength(512),
    v.regex(
      /^\/(?:[A-Za-z0-9._~-]+\/)*(?:[A-Za-z0-9._~-]+|\*)?$/,
      "expected a path from / (letters, digits, . _ ~ -), optionally ending in /* for everything under it",
    ),
  ),
  /** The request body bound (default 16 KiB, ceiling 1 MiB). */
  max_body_bytes: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(MAX_SERVICE_BODY_BYTES)),
    DEFAULT_SERVICE_BODY_BYTES,
  ),
  /** Requests a minute the route takes, from all clients together. */
  rate_per_minute: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000)), 60),
  /** A request's time limit (never more than `[limits] deadline_ms`). */
  deadline_ms: Deadline,
});

/** A `[[provider]]`: a model provider this extension's `providers` export answers completions for. */
export const ProviderRow = v.strictObject({
  name: Identifier,
  description: v.pipe(v.string(), v.maxLength(4096)),
  /** Where its API is; handed to each completion (a `[net] allow` rule must still allow it). */
  base_url: v.optional(
    v.union([
      v.literal(""),
      v.pipe(v.string(), v.maxLength(2048), v.regex(/^https?:\/\/[^\s]+$/, "expected an http or https URL")),
    ]),
    "",
  ),
  /** The name of a secret the broker injects into the provider's requests (handed to each completion). */
  secret: v.optional(Identifier),
  models: v.pipe(v.array(ProviderModel), v.minLength(1, "expected at least one model"), v.maxLength(256)),
  /** A completion's time limit (default and ceiling: [limits] deadline_ms). */
  deadline_ms: Deadline,
});

export const Limits = v.strictObject({
  memory_mb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16), v.maxValue(8192)), 128),
  deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3_600_000)), 30_000),
  idle_s: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(86_400)), 300),
  kv_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 1_048_576),
  /** `net.fetch` requests one invocation may have in flight at once (more wait their turn). */
  fetches: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64)), 4),
  /**
   * Invocations one session may have open in this extension at once (1: one at a time). They share
   * a satellite process unless `satellites` spreads them.
   */
  concurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_OPEN_INVOCATIONS)), 1),
  /**
   * Processes those invocations are spread over (for CPU-bound tools; at most `concurrency`).
   * Absent means 1, and is left out of an approval's grants so older approvals keep their bytes.
   */
  satellites: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16))),
});

/** What sizes a pool: the limits `satellitesOf` reads. */
export interface PoolLimits {
  readonly concurrency: number;
  readonly satellites?: number | undefined;
  readonly memory_mb: number;
}

/** The satellites `[limits]` asks for: `satellites` (default 1), never more than its `concurrency`. */
export function satellitesOf(limits: PoolLimits): number {
  return Math.max(1, Math.min(limits.satellites ?? 1, limits.concurrency));
}

/** `[storage]`: the extension's own SQLite database (docs/initializers.md). */
export const StorageTable = v.strictObject({
  /** The database's size quota: SQLite refuses to grow it past this. */
  max_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(65_536), v.maxValue(1_073_741_824)), 10_485_760),
});

export const Manifest = v.strictObject({
  name: Identifier,
  version: v.pipe(
    v.string(),
    v.regex(
      /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/,
      "expected a semver version like 1.2.3",
    ),
  ),
  description: v.pipe(v.string(), v.maxLength(4096)),
  entry: v.pipe(v.string(), v.regex(/^[^/].*\.(?:ts|js|mjs|mts)$/, "expected a relative path to a .ts or .js file")),
  requires: v.optional(v.array(Identifier), []),
  /** Registry order after dependency order: lower first, then the name. */
  priority: v.optional(v.pipe(v.number(), v.integer(), v.minValue(-1_000_000), v.maxValue(1_000_000)), 0),
  tool: v.optional(v.array(ToolRow), []),
  hook: v.optional(v.array(HookRow), []),
  command: v.optional(v.array(CommandRow), []),
  context: v.optional(v.array(ContributionRow), []),
  route: v.optional(v.array(RouteRow), []),
  compaction: v.optional(v.array(ContributionRow), []),
  provider: v.optional(v.array(ProviderRow), []),
  service: v.optional(v.array(ServiceRow), []),
  /** Search providers its `search` export answers, in the sessions it is active in (./search-row.ts). */
  search: v.optional(v.array(SearchRow), []),
  /** Capabilities beyond the ones every extension has: `search = true` (./search-row.ts). */
  capabilities: v.optional(CapabilitiesTable),
  /** Acts of its own it may report to the session's hooks (`ctx.act`), by name (./act-row.ts). */
  act: v.optional(ActRows, []),
  managed: v.optional(ManagedTable),
  observe: v.optional(ObserveTable),
  init: v.optional(InitTable),
  /** OAuth sign-ins the broker runs; their tokens fill `[[secret]]`s and never reach the jail (docs/login.md). */
  login: v.optional(v.array(LoginRow), []),
  net: v.optional(v.strictObject({ allow: v.optional(v.array(v.string()), []) }), { allow: [] }),
  secret: v.optional(v.array(SecretRow), []),
  limits: v.optional(Limits, {}),
  storage: v.optional(StorageTable),
  /** Model calls of its own (`model.complete`), with a token budget (./model-table.ts). */
  model: v.optional(ModelTable),
});
/**
 * A parsed manifest; `kinds`: the sections of kinds added beside the built-ins (./kind-section.ts),
 * when any were read.
 */
export type Manifest = v.InferOutput<typeof Manifest> & { readonly kinds?: ManifestKinds };

/** Whether `name` is a section of the built-in manifest (an added kind may not take it). */
export function isManifestKey(name: string): boolean {
  return Object.hasOwn(Manifest.entries, name);
}

/** The built-in extension that runs operator-written command hooks (broker/hooks/builtin-hooks.ts). */
export const BUILTIN_HOOKS_NAME = "hooks";
/** Names an installed extension may not take: they belong to built-ins. */
export const RESERVED_NAMES: readonly string[] = [BUILTIN_HOOKS_NAME];

function describe(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue) ?? "(top level)";
  if (issue.kind === "schema" && issue.received === "undefined")
    return `${path}: missing; ${issue.expected ? `expected ${issue.expected}` : issue.message}`;
  return `${path}: ${issue.message}`;
}

/**
 * Parses and validates manifest text; `file` is only for messages. `sections`:
 * the added kinds' sections it may hold (any other unknown section is refused).
 */
export function parseManifest(text: string, file: string, sections: KindSections = new Map()): Manifest {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    const where = err instanceof TomlError ? ` (line ${err.line}, column ${err.column})` : "";
    throw new TetherError(
      BrokerCode.installFailed,
      `${file}${where}: not valid TOML: ${(err as Error).message.split("\n")[0]}`,
    );
  }
  const kinds = kindSections(raw, file, sections);
  const parsed = v.safeParse(Manifest, raw, { abortEarly: false });
  if (!parsed.success) {
    throw new TetherError(BrokerCode.installFailed, `${file}: ${parsed.issues.map(describe).join("; ")}`);
  }
  const m: Manifest = kinds === undefined ? parsed.output : { ...parsed.output, kinds };
  if (RESERVED_NAMES.includes(m.name)) {
    throw new TetherError(
      BrokerCode.installFailed,
      `${file}: name: '${m.name}' is reserved for the built-in extension of that name; choose another`,
    );
  }
  const seen = new Set<string>();
  for (const tool of m.tool) {
    if (seen.has(tool.name))
      throw new TetherError(BrokerCode.installFailed, `${file}: tool '${tool.name}' is declared twice`);
    seen.add(tool.name);
  }
  const commands = new Set<string>();
  for (const command of m.command) {
    if (commands.has(command.name))
      throw new TetherError(BrokerCode.installFailed, `${file}: command '${command.name}' is declared twice`);
    commands.add(command.name);
    const names = new Set<string>();
    for (const argument of command.arguments) {
      if (names.has(argument.name))
        throw new TetherError(
          BrokerCode.installFailed,
          `${file}: command '${command.name}' names its argument '${argument.name}' twice`,
        );
      names.add(argument.name);
    }
  }
  for (const kind of ["context", "route", "compaction", "search"] as const) {
    const names = new Set<string>();
    for (const row of m[kind]) {
      if (names.has(row.name))
        throw new TetherError(BrokerCode.installFailed, `${file}: ${kind} '${row.name}' is declared twice`);
      names.add(row.name);
    }
  }
  const resources = routeResourceProblems(m.route, file);
  if (resources.length > 0) throw new TetherError(BrokerCode.installFailed, resources.join("; "));
  const services = new Set<string>();
  for (const row of m.service) {
    if (services.has(row.name))
      throw new TetherError(BrokerCode.installFailed, `${file}: service '${row.name}' is declared twice`);
    services.add(row.name);
  }
  const providers = new Set<string>();
  for (const row of m.provider) {
    if (providers.has(row.name))
      throw new TetherError(BrokerCode.installFailed, `${file}: provider '${row.name}' is declared twice`);
    providers.add(row.name);
    const ids = new Set<string>();
    for (const model of row.models) {
      if (ids.has(model.id))
        throw new TetherError(
          BrokerCode.installFailed,
          `${file}: provider '${row.name}' lists model '${model.id}' twice`,
        );
      ids.add(model.id);
    }
    if (row.secret !== undefined && !m.secret.some((s) => s.name === row.secret)) {
      throw new TetherError(
        BrokerCode.installFailed,
        `${file}: provider '${row.name}' names the secret '${row.secret}', which no [[secret]] row declares; ` +
          `add one (with the rules and header it goes to), or remove secret from the provider`,
      );
    }
  }
  loginProblems(m, file);
  checkActRows(m.act, file);
  const events = new Set<string>();
  for (const row of m.hook) {
    if (events.has(row.event))
      throw new TetherError(BrokerCode.installFailed, `${file}: hook '${row.event}' is declared twice`);
    events.add(row.event);
  }
  const secrets = secretProblems(m.secret, m.net.allow, file);
  if (secrets.length > 0) throw new TetherError(BrokerCode.installFailed, secrets.join("; "));
  const model = modelTableProblems(m.model, file);
  if (model.length > 0) throw new TetherError(BrokerCode.installFailed, model.join("; "));
  return m;
}

/**
 * Takes the registered added kinds' sections out of `raw` (the rest is checked
 * as the built-in manifest), each checked by its kind's row schema: a list of
 * at most its `maxRows` rows, each named as a tool is, no name twice.
 */
function kindSections(raw: unknown, file: string, sections: KindSections): ManifestKinds | undefined {
  if (sections.size === 0 || typeof raw !== "object" || raw === null) return undefined;
  const table = raw as Record<string, unknown>;
  const kinds: Record<string, ManifestKinds[string]> = {};
  for (const [kind, section] of sections) {
    if (!Object.hasOwn(table, kind)) continue;
    const value = table[kind];
    delete table[kind];
    const max = Math.min(section.maxRows ?? MAX_KIND_ROWS, MAX_KIND_ROWS);
    const rows = v.safeParse(
      v.pipe(v.array(v.intersect([section.row, v.object({ name: Identifier })])), v.maxLength(max)),
      value,
      { abortEarly: false },
    );
    if (!rows.success)
      throw new TetherError(
        BrokerCode.installFailed,
        `${file}: ${rows.issues
          .slice(0, 8)
          .map((issue) => (v.getDotPath(issue) === null ? `${kind}: ${issue.message}` : `${kind}.${describe(issue)}`))
          .join("; ")}`,
      );
    const names = new Set<string>();
    for (const row of rows.output) {
      if (names.has(row.name))
        throw new TetherError(BrokerCode.installFailed, `${file}: ${kind} '${row.name}' is declared twice`);
      names.add(row.name);
    }
    kinds[kind] = { sees: section.sees, rows: rows.output as ManifestKinds[string]["rows"] };
  }
  return Object.keys(kinds).length === 0 ? undefined : kinds;
}

/** `[[login]]` rows: unique names, endpoints the URL parser accepts, and a declared `[[secret]]` each. */
function loginProblems(m: Manifest, file: string): void {
  const names = new Set<string>();
  const secrets = new Set<string>();
  m.login.forEach((row, i) => {
    if (names.has(row.name))
      throw new TetherError(BrokerCode.installFailed, `${file}: login '${row.name}' is declared twice`);
    names.add(row.name);
    if (secrets.has(row.secret))
      throw new TetherError(
        BrokerCode.installFailed,
        `${file}: login.${i}.secret: '${row.secret}' is filled by another login already; give each login its ` +
          `own secret`,
      );
    secrets.add(row.secret);
    for (const [field, url] of endpointsOf(row)) {
      const problem = endpointProblem(url);
      if (problem !== null) throw new TetherError(BrokerCode.installFailed, `${file}: login.${i}.${field}: ${problem}`);
    }
    const origins = originsOf(row);
    if (origins.length > 1 && !row.cross_origin) {
      throw new TetherError(
        BrokerCode.installFailed,
        `${file}: login '${row.name}': its endpoints are on ${origins.length} origins (${origins.join(", ")}); ` +
          `the token endpoint receives the operator's authorization and PKCE verifier, so they must share one — ` +
          `or, if that is how this server works, say cross_origin = true (review tells the operator)`,
      );
    }
    if (!m.secret.some((s) => s.name === row.secret)) {
      throw new TetherError(
        BrokerCode.installFailed,
        `${file}: login.${i}.secret: no [[secret]] named '${row.secret}'; declare it, or name one that is declared`,
      );
    }
  });
}

/** Reads `<dir>/manifest.toml`. */
export function readManifest(dir: string): Manifest {
  const file = join(dir, "manifest.toml");
  return parseManifest(readManifestFile(file), file);
}

/** The most a manifest.toml may hold. */
export const MANIFEST_BYTES = 256 * 1024;

/**
 * The text of a manifest file, the one file of the folder the broker reads in its own
 * process: a regular file with one name (not a link: its contents could be any host
 * file, and a parse error would quote them), within MANIFEST_BYTES, checked on the
 * descriptor it is read from (opened without following a link, without blocking on a FIFO).
 */
export function readManifestFile(file: string): string {
  const refuse = (why: string): never => {
    throw new TetherError(BrokerCode.installFailed, `${file}: ${why}`);
  };
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return refuse(
      code === "ELOOP"
        ? "is a symlink; the manifest must be a regular file in the extension folder"
        : `cannot read the manifest (is ${dirname(file)} an extension folder?)`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) refuse("is not a regular file; the manifest must be a regular file in the extension folder");
    if (st.nlink > 1) refuse(`is a hard link (${st.nlink} names); copy it into the extension folder instead`);
    if (st.size > MANIFEST_BYTES) refuse(`is ${st.size} bytes, over the ${MANIFEST_BYTES} a manifest may be`);
    const bytes = Buffer.alloc(MANIFEST_BYTES + 1);
    const read = readSync(fd, bytes, 0, bytes.length, 0);
    if (read > MANIFEST_BYTES) refuse(`is over the ${MANIFEST_BYTES} bytes a manifest may be`);
    return bytes.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
