/**
 * The invocation kinds, one row each: whether an approved extension may be
 * asked an invocation of the kind, the time limit that bounds it, and whether
 * that limit covers the wait for the satellite too. The kernel asks the row
 * before every invocation and knows nothing else of a kind.
 *
 * The built-in kinds are `builtinKinds`; a kind added beside them is an
 * `ExtraKind` — its wire half (jail-runtime/wire/kinds.ts: name, payload and
 * answer schemas), its manifest section (install/kind-section.ts) and its row
 * (default: `namedKindRow`) — given to the broker at construction
 * (`Broker.open({ kinds: [...] })`), which makes the table with `kindTable`.
 */
import * as v from "valibot";
import { DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import {
  type AnyKind,
  type BuiltinKindName,
  ExtraKindName,
  type KindDefinition,
  MAX_KIND_JSON,
} from "../../jail-runtime/wire/kinds.js";
import type { SessionKind } from "../../jail-runtime/wire/session-kinds.js";
import { WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import { type ToolArgsChecker, toolArgsKey } from "../base/tool-args.js";
import type { KindSection, KindSections } from "../install/kind-section.js";
import { isManifestKey, type Manifest } from "../install/manifest.js";
import type { Grants } from "../registry/grants.js";
import type { Installed } from "../registry/registry.js";
import { DEFAULT_SESSION_DEADLINE_MS, sessionKindRule } from "./session-kind-rule.js";

/** A hook's time limit when its `[[hook]]` row sets none. */
export const DEFAULT_HOOK_DEADLINE_MS = 5_000;

/** What a row is asked about: one invocation of an approved extension. */
export interface KindCall {
  readonly extension: string;
  readonly installed: Installed;
  readonly grants: Grants;
  readonly name: string;
  readonly payload: string;
}

/**
 * Refused before the satellite is asked; `recorded`: the refusal still gets a ledger row (the
 * caller named a real row).
 */
export interface KindRefusal {
  readonly refused: Failure;
  readonly recorded: boolean;
}

export interface KindRule {
  readonly deadlineMs: number;
}

export interface KindRow {
  /** True when the time limit counts from when it is asked, waiting behind the satellite's open call included. */
  readonly waitCounts: boolean;
  rule(call: KindCall): KindRule | KindRefusal;
  /** What a message calls one invocation named `name` ("The hook", "route 'x'"). */
  what(name: string): string;
}

/** Every built-in kind's row, and those of the kinds added beside them. */
export type KindTable = Readonly<Record<BuiltinKindName, KindRow>> & Readonly<Record<string, KindRow>>;

/** The row of `kind` in `table`, its own (never one its prototype lends), or undefined. */
export function kindRow(table: KindTable, kind: AnyKind): KindRow | undefined {
  return Object.hasOwn(table, kind) ? table[kind] : undefined;
}

const refused = (error: Failure, recorded = false): KindRefusal => ({ refused: error, recorded });
const list = (names: readonly string[]) => [...names].sort().join(", ");

function toolRow(args: ToolArgsChecker): KindRow {
  return {
    waitCounts: false,
    what: (name) => `tool '${name}'`,
    rule: ({ extension, installed, grants, name, payload }) => {
      const row = installed.manifest.tool.find((t) => t.name === name);
      if (row === undefined || !grants.tools.includes(name))
        return refused(
          failure(WireCode.unknownTool, `Unknown tool '${name}'; '${extension}' serves [${list(grants.tools)}]`),
        );
      const checked = args.check(toolArgsKey(installed.manifestHash, name), row.parameters, payload);
      // Refused before it reached the satellite; the ledger still shows it.
      if (!checked.ok) return refused(failure(WireCode.badArguments, `tool '${name}': ${checked.msg}`), true);
      return { deadlineMs: Math.min(row.deadline_ms ?? grants.limits.deadline_ms, grants.limits.deadline_ms) };
    },
  };
}

const commandRow: KindRow = {
  waitCounts: false,
  what: (name) => `command '/${name}'`,
  rule: ({ extension, installed, grants, name }) => {
    const commands: Manifest["command"] = installed.manifest.command;
    if (!commands.some((c) => c.name === name)) {
      const served = commands.map((c) => `/${c.name}`);
      return refused(
        failure(WireCode.unknownTool, `Unknown command '/${name}'; '${extension}' serves [${list(served)}]`),
      );
    }
    return { deadlineMs: grants.limits.deadline_ms };
  },
};

const hookRow: KindRow = {
  waitCounts: true,
  what: () => "The hook",
  rule: ({ extension, installed, grants, name }) => {
    const row = installed.manifest.hook.find((h) => h.event === name);
    if (row === undefined || !grants.hooks.includes(name))
      return refused(failure(WireCode.unhandled, `'${extension}' has no approved hook for '${name}'`));
    return { deadlineMs: Math.min(row.deadline_ms ?? DEFAULT_HOOK_DEADLINE_MS, grants.limits.deadline_ms) };
  },
};

/** A session-facing kind (kernel/session-kind-rule.ts says whether, and for how long), timed as a hook is. */
function sessionRow(kind: SessionKind): KindRow {
  return {
    waitCounts: true,
    what: (name) => `${kind}${name === "" ? "" : ` '${name}'`}`,
    rule: ({ extension, installed, grants, name }) => {
      const rule = sessionKindRule(extension, installed.manifest, grants, kind, name);
      return "ok" in rule ? refused(rule) : rule;
    },
  };
}

/** Every kind the broker asks, as it asks them. */
export function builtinKinds(args: ToolArgsChecker): KindTable {
  return {
    tool: toolRow(args),
    command: commandRow,
    event: hookRow,
    context: sessionRow("context"),
    prepare: sessionRow("prepare"),
    close: sessionRow("close"),
    observe: sessionRow("observe"),
    route: sessionRow("route"),
    compact: sessionRow("compact"),
    complete: sessionRow("complete"),
    service: sessionRow("service"),
    init: sessionRow("init"),
    search: sessionRow("search"),
  };
}

/** A kind added beside the built-ins: its wire half, its manifest section `[[<name>]]`, and its kernel row. */
export interface ExtraKind<P = unknown, A = unknown> {
  readonly definition: KindDefinition<P, A>;
  readonly section: KindSection;
  /** May it be asked, for how long (default: `namedKindRow(definition)`). */
  readonly row?: KindRow;
}

/**
 * The row most added kinds want: the name is one of its `[[<kind>]]` rows and
 * granted; the payload is JSON text its payload schema accepts (refused
 * `bad_arguments`, with a ledger row, before the satellite is asked); its time
 * limit is the row's `deadline_ms`, 5 s by default, never more than
 * `[limits] deadline_ms`, counting the wait for the satellite.
 */
export function namedKindRow(definition: KindDefinition): KindRow {
  const kind = definition.name;
  return {
    waitCounts: true,
    what: (name) => `${kind} '${name}'`,
    rule: ({ extension, installed, grants, name, payload }) => {
      const rows = installed.manifest.kinds?.[kind]?.rows ?? [];
      const granted = grants.kinds?.[kind] ?? [];
      const row = rows.find((r) => r.name === name);
      if (row === undefined || !granted.includes(name))
        return refused(
          failure(WireCode.unknownTool, `'${extension}' has no approved ${kind} '${name}'; it has [${list(granted)}]`),
        );
      const checked = checkPayload(definition, payload);
      if (checked !== null) return refused(failure(WireCode.badArguments, `${kind} '${name}': ${checked}`), true);
      return { deadlineMs: Math.min(row.deadline_ms ?? DEFAULT_SESSION_DEADLINE_MS, grants.limits.deadline_ms) };
    },
  };
}

/** Why `payload` is not what `definition` hands a satellite, or null when it is. */
export function checkPayload(definition: KindDefinition, payload: string): string | null {
  if (payload.length > MAX_KIND_JSON) return `the payload is over the ${MAX_KIND_JSON} characters it may be`;
  let value: unknown;
  try {
    value = parseBoundedJson(payload);
  } catch (err) {
    return err instanceof DocumentBoundsError ? `the payload is ${err.message}` : "the payload is not JSON text";
  }
  const parsed = v.safeParse(definition.payload, value);
  return parsed.success ? null : describeIssues(parsed.issues);
}

/** The kinds table: the built-in rows and each added kind's; throws when an added kind takes a taken name. */
export function kindTable(builtin: KindTable, extra: readonly ExtraKind[] = []): KindTable {
  const table: Record<string, KindRow> = { ...builtin };
  for (const kind of extra) {
    const name = kind.definition.name;
    const named = v.safeParse(ExtraKindName, name);
    if (!named.success) throw new Error(`Cannot add the kind '${name}': ${named.issues[0].message}`);
    if (isManifestKey(name)) throw new Error(`Cannot add the kind '${name}': the manifest has a [${name}] of its own`);
    if (Object.hasOwn(table, name)) throw new Error(`Cannot add the kind '${name}': it is added twice`);
    table[name] = kind.row ?? namedKindRow(kind.definition);
  }
  return table as KindTable;
}

/** The added kinds' manifest sections, by kind. */
export function kindSections(extra: readonly ExtraKind[] = []): KindSections {
  return new Map(extra.map((k) => [k.definition.name, k.section]));
}

/** The added kinds' wire definitions, by kind: what their answers are checked against. */
export function kindDefinitions(extra: readonly ExtraKind[] = []): ReadonlyMap<string, KindDefinition> {
  return new Map(extra.map((k) => [k.definition.name, k.definition]));
}
