/**
 * Hooks: one handler per lifecycle event an extension declares.
 *
 * The broker sends the event's payload as JSON text and reads the answer back
 * as JSON text. A hook returns a verdict object; {@linkcode proceed} changes nothing.
 */
import type { Ctx } from "./ctx.js";

/**
 * The events an extension can declare in `[[hook]] event = …`.
 *
 * @example
 * ```ts
 * import { HOOK_EVENTS } from "@tether/ext";
 * HOOK_EVENTS.includes("tool_call"); // true
 * ```
 */
export const HOOK_EVENTS = [
  "session_start",
  "before_agent_start",
  "context",
  "tool_call",
  "tool_result",
  "agent_end",
  "agent_settled",
  "before_compact",
  "usage",
  "cap_call",
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** A verdict: every field optional; an empty verdict means "proceed". */
export type Verdict = Readonly<Record<string, unknown>>;

/**
 * The verdict that changes nothing.
 *
 * @example
 * ```ts
 * import { hook, proceed } from "@tether/ext";
 * export const hooks = { session_start: hook("session_start", () => proceed) };
 * ```
 */
export const proceed: Verdict = Object.freeze({});

/** One hook: the event it answers and the handler. */
export interface Hook<E extends HookEvent = HookEvent> {
  readonly event: E;
  readonly run: (payload: unknown, ctx: Ctx) => Verdict | Promise<Verdict>;
}

/**
 * Declares a hook for one event.
 *
 * @example
 * ```ts
 * import { hook, proceed } from "@tether/ext";
 * const guard = hook("tool_call", (call) => proceed);
 * ```
 */
export function hook<E extends HookEvent>(event: E, run: Hook<E>["run"]): Hook<E> {
  return { event, run };
}

/**
 * One `[[hook]]` row as the generated entry passes it: the event name the
 * manifest declared travels beside the hook, and `answer` checks the two agree.
 */
export type Declared = readonly [event: string, hook: Hook];
