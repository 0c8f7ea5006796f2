/**
 * The invocation kinds, one row each: whether an approved extension may be
 * asked an invocation of the kind, the time limit that bounds it, and whether
 * that limit covers the wait for the satellite too. The kernel asks the row
 * before every invocation and knows nothing else of a kind; a new kind is one
 * row here (and the wire's answer for it, jail-runtime/wire/kinds.ts).
 */
import type { CallKind } from "../../jail-runtime/wire/frames.js";
import type { SessionKind } from "../../jail-runtime/wire/session-kinds.js";
import { WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import type { ToolArgsChecker } from "../base/tool-args.js";
import type { Manifest } from "../install/manifest.js";
import type { Grants } from "../registry/grants.js";
import type { Installed } from "../registry/registry.js";
import { sessionKindRule } from "./session-kind-rule.js";

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

/** Refused before the satellite is asked; `recorded`: the refusal still gets a ledger row (the caller named a real row). */
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

export type KindTable = Readonly<Record<CallKind, KindRow>>;

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
      const checked = args.check(`${installed.manifestHash}:${name}`, row.parameters, payload);
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
  };
}
