/**
 * What a `[[hook]] match` list is tested against, and the test: the subject of
 * a `tool_call`/`tool_result` is the tool's name; of a `cap_call`, the
 * capability's name and, for net capabilities, the host (docs/hooks.md, "Hook
 * matchers"). The manifest checks the patterns' syntax (broker/install/hook-row.ts).
 */
import { globMatches } from "./hook-matcher.js";

export interface HookSubject {
  /** The tool's name, or the capability's. */
  readonly name: string;
  /** A net capability call's host (normal form); null when the call has none or it is unknown. */
  readonly host?: string | null;
}

/** The subject of one event's payload; null for events that have none. */
export function subjectOf(event: string, payload: Readonly<Record<string, unknown>>): HookSubject | null {
  if (event === "tool_call" || event === "tool_result") return { name: String(payload["tool"]) };
  if (event !== "cap_call") return null;
  const request = payload["request"] as { host?: unknown } | undefined;
  const host = typeof request?.host === "string" ? request.host : hostOf(String(payload["target"]));
  return { name: String(payload["capability"]), host };
}

/** A URL target's host, or null when the target is not a URL (a kv key). */
function hostOf(target: string): string | null {
  try {
    return new URL(target).hostname || null;
  } catch {
    return null;
  }
}

/**
 * Whether a hook with `match` is asked about `subject`. No list, or no subject:
 * asked (today's behaviour). A pattern with a host matches only net calls to a
 * matching host; a call whose host is unknown is asked about, so a guard sees
 * too much rather than too little.
 */
export function matchesSubject(match: readonly string[] | undefined, subject: HookSubject | null): boolean {
  if (match === undefined || subject === null) return true;
  return match.some((pattern) => {
    const space = pattern.indexOf(" ");
    if (space < 0) return globMatches(pattern, subject.name);
    if (!globMatches(pattern.slice(0, space), subject.name)) return false;
    const host = subject.host ?? null;
    return host === null || globMatches(pattern.slice(space + 1), host);
  });
}

/** A hook as review and status show it: `tool_call (only: echo, fs_*)`, or just the event. */
export function describeHook(event: string, match: readonly string[] | undefined): string {
  return match === undefined ? event : `${event} (only: ${match.join(", ")})`;
}
