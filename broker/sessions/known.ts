/**
 * Every extension a session could run — installed ones and the built-ins —
 * with what each contributes and needs, as its manifest (or built-in row)
 * says, and whether its approval stands.
 */
import type { KernelHost } from "../kernel/host.js";
import { BUILTIN_HOOKS_NAME, BUILTIN_HOOKS_PRIORITY, BUILTIN_HOOK_EVENTS } from "../hooks/builtin-hooks.js";
import { matchOf } from "../install/hook-row.js";
import type { Approval, Installed } from "../registry/registry.js";

/** What an extension contributes and needs, as declared. */
export interface Contributions {
  readonly name: string;
  readonly builtin: boolean;
  readonly priority: number;
  readonly requires: readonly string[];
  readonly tools: readonly string[];
  readonly commands: readonly string[];
  /** Its `[[context]]` loaders. */
  readonly contexts: readonly string[];
  readonly routes: readonly string[];
  readonly compactions: readonly string[];
  /** It declares `[managed]`: prepared per session, closed when let go. */
  readonly managed: boolean;
}

/** One extension the session knows of: installed or built in. */
export interface Known extends Contributions {
  /** `match`: the manifest row's patterns; undefined: every subject. */
  readonly hooks: readonly {
    readonly event: string;
    readonly onError: "note" | "block";
    readonly match: readonly string[] | undefined;
  }[];
  readonly installed: Installed | null;
  readonly notApproved: string | null;
  /**
   * The grants of the approval in force as the session read it (null: none stands, or built in): its
   * routes and compaction strategies are served by them, whether or not a satellite is up yet.
   */
  readonly grants: Approval["grants"] | null;
}

/** Everything the session could run: installed extensions and the built-ins. */
export function knownExtensions(broker: KernelHost): Map<string, Known> {
  const known = new Map<string, Known>();
  for (const installed of broker.registry.list()) {
    const m = installed.manifest;
    let notApproved: string | null = null;
    let grants: Approval["grants"] | null = null;
    try {
      grants = broker.approved(m.name).approval.grants;
    } catch (err) {
      notApproved = (err as Error).message;
    }
    known.set(m.name, {
      name: m.name,
      builtin: false,
      priority: m.priority,
      requires: m.requires,
      tools: m.tool.map((t) => t.name),
      commands: m.command.map((c) => c.name),
      contexts: m.context.map((c) => c.name),
      routes: m.route.map((r) => r.name),
      compactions: m.compaction.map((c) => c.name),
      managed: m.managed !== undefined,
      hooks: m.hook.map((h) => ({ event: h.event, onError: h.on_error ?? "note", match: matchOf(h) })),
      installed,
      notApproved,
      grants,
    });
  }
  known.set(BUILTIN_HOOKS_NAME, {
    name: BUILTIN_HOOKS_NAME,
    builtin: true,
    priority: BUILTIN_HOOKS_PRIORITY,
    requires: [],
    tools: [],
    commands: [],
    contexts: [],
    routes: [],
    compactions: [],
    managed: false,
    // The operator's hooks.json has matchers of its own, applied when the bus asks it.
    hooks: BUILTIN_HOOK_EVENTS.map((event) => ({ event, onError: "note" as const, match: undefined })),
    installed: null,
    notApproved: null,
    grants: null,
  });
  return known;
}
