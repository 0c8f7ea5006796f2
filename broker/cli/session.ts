/**
 * `tether session`: which extensions a session runs, and the preferences that
 * decide it.
 *
 *   status   opens the session in this process (real boots), prints each
 *            extension's state and why, then closes it
 *   enable / disable / reset
 *            write the saved preference (global default, or one session's
 *            override); a live session applies it on `reload`
 *   folds    prints what compaction strategies folded in a session (session-folds.ts)
 */
import * as v from "valibot";
import type { Broker } from "../broker.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { describeHook } from "../hooks/hook-subject.js";
import { BUILTIN_HOOKS_NAME } from "../install/manifest.js";
import { GLOBAL, Preferences, type Preference } from "../sessions/preferences.js";
import { SessionId, SessionRecords } from "../sessions/session-records.js";
import type { ExtensionStatus } from "../sessions/session.js";
import type { ContextPiece } from "../sessions/context-loaders.js";
import { workspaceFolder } from "./workspace.js";

/** Each action with what it takes after `tether session <action>`. */
const USAGE = [
  ["status", "[--session <id>] [--workspace <dir>]"],
  ["enable", "<name> [--session <id>]"],
  ["disable", "<name> [--session <id>]"],
  ["reset", "<name> --session <id>"],
  ["folds", "<id>"],
] as const;
export type SessionAction = (typeof USAGE)[number][0];
export const SESSION_ACTIONS: readonly SessionAction[] = USAGE.map(([action]) => action);
const usage = (action: SessionAction): string => `tether session ${action} ${USAGE.find(([a]) => a === action)![1]}`;

/** The session `tether session status` opens when no --session is given. */
export const DEFAULT_SESSION = "default";

export interface SessionArgs {
  readonly action: SessionAction;
  /** The extension (enable, disable, reset). */
  readonly extension: string | null;
  /** The --session given, if any (folds: its argument). */
  readonly session: string | null;
  /** The --workspace given, resolved (status). */
  readonly workspace: string | null;
}

/**
 * Checks `tether session` arguments before any home is opened: the usage
 * message (exit 2) when they are wrong, else what to do.
 */
export function parseSessionArgs(
  args: readonly string[],
  values: { session?: string | undefined; workspace?: string | undefined },
): SessionArgs | string {
  const [action, extension] = args;
  if (action === undefined) return `missing what to do: ${SESSION_ACTIONS.map(usage).join(" | ")}`;
  if (!(SESSION_ACTIONS as readonly string[]).includes(action)) {
    return `unknown action '${action}': expected ${SESSION_ACTIONS.join(", ")}`;
  }
  const act = action as SessionAction;
  if (act === "folds") {
    if (extension === undefined) return `missing the session id: ${usage("folds")}`;
    const checked = v.safeParse(SessionId, extension);
    if (!checked.success) return `'${extension}': ${checked.issues[0].message}`;
    if (values.session !== undefined || values.workspace !== undefined)
      return `folds takes the session id as its argument, not --session or --workspace: ${usage("folds")}`;
    return { action: act, extension: null, session: extension, workspace: null };
  }
  if (act !== "status" && extension === undefined) return `missing the extension name: ${usage(act)}`;
  if (act === "status" && extension !== undefined) return `unexpected '${extension}': ${usage("status")}`;
  if (act === "reset" && values.session === undefined) {
    return (
      `reset removes one session's override and needs --session <id>: ${usage("reset")} ` +
      `(to change the global default: tether session enable|disable <name>)`
    );
  }
  if (values.session !== undefined) {
    if (values.session === GLOBAL)
      return `--session '${GLOBAL}': that name is reserved for the global defaults (leave out --session to set them)`;
    const checked = v.safeParse(SessionId, values.session);
    if (!checked.success) return `--session '${values.session}': ${checked.issues[0].message}`;
  }
  let workspace: string | null = null;
  if (values.workspace !== undefined) {
    if (act !== "status") return `--workspace applies to tether session status only`;
    const given = workspaceFolder(values.workspace);
    if ("error" in given) return given.error;
    workspace = given.folder;
  }
  return { action: act, extension: extension ?? null, session: values.session ?? null, workspace };
}

// ── status ───────────────────────────────────────────────────────────────

export interface StatusResult {
  readonly session: string;
  readonly workspace: string;
  readonly statuses: ExtensionStatus[];
  /** What the built-in hooks' SessionEnd command hooks said when the session closed. */
  readonly closeNotes: string[];
  /** The session's composed context (its loaders' and preparations' texts), in registry order. */
  readonly context: ContextPiece[];
}

/**
 * Opens the session in this broker (booting what it activates), reads the
 * status of every extension and closes the session again. The session's saved
 * policy is kept; its recorded workspace too, unless `workspace` is given
 * (a session never opened before works in `cwd`).
 */
export async function sessionStatus(
  broker: Broker,
  id: string,
  workspace: string | null,
  cwd = process.cwd(),
): Promise<StatusResult> {
  const { Session } = await import("../sessions/session.js");
  // In a fleet the saved record is the fleet's: leased to this host and pulled first.
  await broker.fleet?.openSession(id);
  const record = new SessionRecords(broker.store).get(id);
  const where = workspace ?? record?.workspace ?? cwd;
  const session = await Session.open(broker, {
    id,
    workspace: where,
    ...(record !== null ? { policy: record.policy } : {}),
  });
  let statuses: ExtensionStatus[];
  let context: ContextPiece[];
  try {
    statuses = session.status();
    context = session.context();
  } catch (err) {
    await session.close();
    throw err;
  }
  const closeNotes = await session.close();
  return { session: session.id, workspace: where, statuses, closeNotes, context };
}

/** The composed context under the status lines: each piece's source, then its text (first lines), in registry order. */
export function renderContext(context: readonly ContextPiece[]): string {
  if (context.length === 0) return "";
  const shown = (text: string) => {
    const lines = text.split("\n");
    return lines.length > 3 ? [...lines.slice(0, 3), `… (${lines.length - 3} more lines)`] : lines;
  };
  return [
    "",
    "context (registry order):",
    ...context.flatMap((p) => [`  ${p.extension} ${p.source}:`, ...shown(p.text).map((l) => `    ${l}`)]),
  ].join("\n");
}

/** One line, however many lines the reason had (a boot failure quotes the satellite's stderr). */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

/** Where a preference comes from, in words. */
function source(p: Preference): string {
  if (p.source === "session") return "this session's override";
  if (p.source === "global") return "the global default";
  return p.enabled ? "on by default" : "off by default";
}

/** A list, with the names a preparation left off in this session marked. */
function named(
  label: string,
  names: readonly string[],
  off: readonly string[],
  shown: (n: string) => string = (n) => n,
): string {
  const on = names.filter((n) => !off.includes(n)).map(shown);
  return `${label}: ${on.join(", ") || "none"}${off.length > 0 ? ` (off here: ${off.map(shown).join(", ")})` : ""}`;
}

/** What an active extension adds to the session. */
function contributes(s: ExtensionStatus): string {
  const parts: string[] = [];
  if (s.tools.length > 0) parts.push(named("tools", s.tools, s.toolsOff));
  if (s.commands.length > 0) parts.push(named("commands", s.commands, s.commandsOff, (c) => `/${c}`));
  if (s.hooks.length > 0)
    parts.push(`hooks: ${s.hooks.map((event) => describeHook(event, s.matchers[event])).join(", ")}`);
  if (s.contexts.length > 0) parts.push(`context: ${s.contexts.join(", ")}`);
  if (s.routes.length > 0) parts.push(`routes: ${s.routes.join(", ")}`);
  if (s.compactions.length > 0) parts.push(`compactions: ${s.compactions.join(", ")}`);
  if (s.managed) parts.push("managed");
  if (s.observes) parts.push("observes");
  const what = parts.length > 0 ? parts.join("; ") : "adds no tools, commands or hooks";
  // Warnings last, each on its own indented line: an operator should not miss one.
  return [what, ...s.warnings.map((w) => `    warning: ${oneLine(w)}`)].join("\n");
}

/** One line per extension: state, name, then what it adds (active) or why not (inactive, disabled). */
export function renderStatus(statuses: readonly ExtensionStatus[]): string {
  const width = Math.max(0, ...statuses.map((s) => s.name.length));
  return statuses
    .map((s) => {
      // The session's reason already says where a "disabled" came from (session, global, default).
      const what = s.state === "active" ? contributes(s) : oneLine(s.reason ?? s.state);
      return `${s.state.padEnd(8)} ${s.name.padEnd(width)}  ${what}`;
    })
    .join("\n");
}

// ── enable / disable / reset ─────────────────────────────────────────────

export interface PreferenceChange {
  readonly extension: string;
  readonly action: "enable" | "disable" | "reset";
  /** The session whose override changed; null for the global default. */
  readonly session: string | null;
  /** The effective preference now (in that session; for a global change, in sessions without an override). */
  readonly preference: Preference;
  /** reset: whether there was an override to remove. */
  readonly removed: boolean;
  /** A global change: the sessions whose own override still decides for them. */
  readonly overrides: readonly { readonly session: string; readonly enabled: boolean }[];
}

/** The names `enable`/`disable`/`reset` accept: installed extensions and the built-in `hooks`. */
function requireKnown(broker: Broker, extension: string): void {
  const installed = broker.registry.list().map((i) => i.name);
  if (extension === BUILTIN_HOOKS_NAME || installed.includes(extension)) return;
  const list = installed.length > 0 ? `installed: ${[...installed].sort().join(", ")}` : "no extensions are installed";
  throw new TetherError(
    BrokerCode.notInstalled,
    `unknown extension '${extension}' (${list}; built ` +
      `in: ${BUILTIN_HOOKS_NAME}). Run: tether list, or tether install <folder>`,
  );
}

/** Writes the preference and says what is effective now. */
export function changePreference(
  broker: Broker,
  action: "enable" | "disable" | "reset",
  extension: string,
  session: string | null,
): PreferenceChange {
  requireKnown(broker, extension);
  const prefs = new Preferences(broker.store);
  const extensionDefault = extension !== BUILTIN_HOOKS_NAME;
  let removed = false;
  if (session === null) {
    if (action === "reset") throw new Error("reset needs a session"); // parseSessionArgs refuses it first
    prefs.setGlobal(extension, action === "enable");
  } else if (action === "reset") {
    removed = prefs.effective(session, extension, extensionDefault).source === "session";
    prefs.setSession(session, extension, null);
  } else {
    prefs.setSession(session, extension, action === "enable");
  }
  const overrides = session === null ? prefs.overrides(extension) : [];
  return {
    extension,
    action,
    session,
    preference: prefs.effective(session ?? GLOBAL, extension, extensionDefault),
    removed,
    overrides,
  };
}

export function renderChange(change: PreferenceChange): string {
  const state = change.preference.enabled ? "enabled" : "disabled";
  const lines: string[] = [];
  if (change.session === null) {
    lines.push(`${change.extension}: ${state} in every session without its own override (the global default)`);
    if (change.overrides.length > 0) {
      lines.push(
        `sessions with their own ` +
          `override: ${change.overrides.map((o) => `${o.session} (${o.enabled ? "enabled" : "disabled"})`).join(", ")}`,
      );
    }
  } else {
    const why = change.action === "reset" ? (change.removed ? "override removed; " : "there was no override; ") : "";
    lines.push(`${change.extension} in session ${change.session}: ${state} (${why}${source(change.preference)})`);
  }
  const status =
    change.session === null ? "tether session status" : `tether session status --session ${change.session}`;
  lines.push(`A live session applies this on its next reload; ${status} shows it.`);
  return lines.join("\n");
}
