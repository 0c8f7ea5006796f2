/**
 * Hooks: one handler per lifecycle event an extension declares, typed from the
 * event's schemas in the shared wire (`wire/events.ts`): the handler is handed
 * that event's payload and may answer only that event's verdict.
 *
 * The broker sends the payload as JSON text and reads the answer back as JSON
 * text. A hook answers a verdict ({@linkcode proceed} changes nothing) or
 * {@linkcode unhandled} (it does nothing for this event).
 */
import * as v from "valibot";
import {
  EVENT_NAMES,
  EventPayloads,
  type EventName,
  type EventPayload as WirePayload,
  type EventVerdict as WireVerdict,
} from "../wire/events.js";
import type { Ctx } from "./ctx.js";
import { BadArguments, describeArgIssues } from "./decode_args.js";

/**
 * The events an extension can declare in `[[hook]] event = …`: the wire's
 * `EVENT_NAMES` (`wire/events.ts`), the one list of events.
 *
 * @example
 * ```ts
 * import { HOOK_EVENTS } from "@tether/ext";
 * HOOK_EVENTS.includes("tool_call"); // true
 * ```
 */
export const HOOK_EVENTS: readonly EventName[] = EVENT_NAMES;

/**
 * One event a hook can answer.
 *
 * @example
 * ```ts
 * import type { HookEvent } from "@tether/ext";
 * const event: HookEvent = "tool_call";
 * ```
 */
export type HookEvent = (typeof HOOK_EVENTS)[number];

/**
 * The payload event `E`'s hook is handed, as the wire's schema defines it
 * (`wire/events.ts`, `EventPayloads`).
 *
 * @example
 * ```ts
 * import type { EventPayload } from "@tether/ext";
 * const call: EventPayload<"tool_call"> = { tool: "sh", call_id: "c1", arguments: { command: "ls" } };
 * ```
 */
export type EventPayload<E extends HookEvent> = WirePayload<E>;

/**
 * The verdict event `E`'s hook may answer, as the wire's schema defines it
 * (`wire/events.ts`, `EventVerdicts`): every field optional, and a field the
 * event does not take is a type error here and refused by the broker.
 *
 * @example
 * ```ts
 * import type { EventVerdict } from "@tether/ext";
 * const stop: EventVerdict<"tool_call"> = { block: "rm -rf is not allowed here" };
 * const hint: EventVerdict<"session_start"> = { context: "This repo uses pnpm." };
 * ```
 */
export type EventVerdict<E extends HookEvent> = WireVerdict<E>;

/** `true` when `A` and `B` are the same set of names. */
type SameNames<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type MustHold<T extends true> = T;
/** Fails to compile when HOOK_EVENTS and the wire's events drift apart (either way). */
type HookEventsMatchTheWire = MustHold<SameNames<HookEvent, EventName>>;

/**
 * Any event's verdict, untyped: an object whose fields are all optional; the
 * empty verdict means "proceed". Prefer `EventVerdict<E>`, which names the
 * fields event `E` takes.
 *
 * @example
 * ```ts
 * import type { Verdict } from "@tether/ext";
 * const v: Verdict = { context: "the build is green" };
 * ```
 */
export type Verdict = Readonly<Record<string, unknown>>;

/**
 * The verdict that changes nothing: `{}`, which every event's verdict accepts.
 *
 * @example
 * ```ts
 * import { hook, proceed } from "@tether/ext";
 * export const hooks = { session_start: hook("session_start", () => proceed) };
 * ```
 */
export const proceed: Readonly<Record<never, never>> = Object.freeze({});

const UNHANDLED = Symbol("tether.unhandled");

/**
 * What a hook answers when it does nothing for this event (this time): the
 * broker reads the `unhandled` answer as "nothing happened", which is not the
 * same as {@linkcode proceed} (a verdict: "I looked, go ahead"). A frozen,
 * unique object, recognised by identity.
 *
 * @example
 * ```ts
 * import { hook, unhandled } from "@tether/ext";
 * // Only watches `sh`; every other tool call is none of its business.
 * export const hooks = {
 *   tool_call: hook("tool_call", (call) => (call.tool === "sh" ? { notes: ["saw a shell call"] } : unhandled)),
 * };
 * ```
 */
export const unhandled: Readonly<{ [UNHANDLED]: true }> = Object.freeze({ [UNHANDLED]: true as const });

/**
 * What a handler for event `E` may return: `E`'s verdict, or {@linkcode unhandled}.
 *
 * @example
 * ```ts
 * import { unhandled, type HookReply } from "@tether/ext";
 * const reply: HookReply<"context"> = Math.random() < 0.5 ? { context: "Answer in French." } : unhandled;
 * ```
 */
export type HookReply<E extends HookEvent> = EventVerdict<E> | typeof unhandled;

/**
 * What {@linkcode Hook.answer} found: the hook did nothing, or the verdict it
 * answered (not yet rendered as JSON text; `answer()` does that).
 *
 * @example
 * ```ts
 * import { hook, proceed, testCtx, type HookOutcome } from "@tether/ext";
 * const h = hook("before_compact", () => proceed);
 * const outcome: HookOutcome = await h.answer({ reason: "threshold" }, testCtx());
 * // outcome = { unhandled: false, verdict: {} }
 * ```
 */
export type HookOutcome = { readonly unhandled: true } | { readonly unhandled: false; readonly verdict: Verdict };

/**
 * One hook for event `E`, as {@linkcode hook} makes it.
 *
 * - `run` is your handler, typed: call it directly in your own tests.
 * - `answer` is what the dispatch calls with the decoded JSON of the payload:
 *   it checks the payload against `E`'s schema (a payload that does not match
 *   throws `BadArguments` naming the field), runs the handler and says what it
 *   answered. It is what lets a table of hooks for different events be served
 *   with no casts.
 *
 * @example
 * ```ts
 * import { hook, proceed, testCtx, type Hook } from "@tether/ext";
 * const start: Hook<"session_start"> = hook("session_start", () => proceed);
 * await start.run({ session_id: "s1", workspace: "/w", source: "cli" }, testCtx()); // {}
 * await start.answer({ session_id: 1 }, testCtx()); // throws BadArguments: "expected string at .session_id, got 1; …"
 * ```
 */
export interface Hook<E extends HookEvent> {
  readonly event: E;
  readonly run: (payload: EventPayload<E>, ctx: Ctx) => HookReply<E> | Promise<HookReply<E>>;
  readonly answer: (payload: unknown, ctx: Ctx) => Promise<HookOutcome>;
}

/**
 * A hook for some event: the union of `Hook<E>` over every event, so a table
 * can hold hooks for different events and each keeps its own payload type.
 *
 * @example
 * ```ts
 * import { hook, proceed, type AnyHook } from "@tether/ext";
 * const all: AnyHook[] = [hook("session_start", () => proceed), hook("usage", () => proceed)];
 * ```
 */
export type AnyHook = { [E in HookEvent]: Hook<E> }[HookEvent];

/** Every key of every member of a union (`keyof` of a union keeps only the shared ones). */
type KeysOfEach<T> = T extends unknown ? keyof T : never;
/** The fields a reply names that event `E`'s verdict does not take. */
type StrayFields<R, E extends HookEvent> = Exclude<Extract<KeysOfEach<R>, string>, keyof EventVerdict<E>>;
/**
 * Each field a verdict may not name, typed `never`: a reply naming one fails to
 * compile, with the error on that field (`reason: "rm"` on `tool_call`:
 * "Type 'string' is not assignable to type 'undefined'").
 * TypeScript does not check excess fields of a callback's returned object
 * literal, so `hook` checks them through this.
 */
type NotVerdictFields<K extends string> = Partial<Record<K, never>>;

const MAX_PAYLOAD_ISSUES = 8;
const MAX_PAYLOAD_MESSAGE = 1000;

/** Names every field of a payload that does not match its event's schema, bounded (payload text is quoted). */
function describePayloadIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  let text = describeArgIssues(issues.slice(0, MAX_PAYLOAD_ISSUES));
  if (issues.length > MAX_PAYLOAD_ISSUES) text += `; and ${issues.length - MAX_PAYLOAD_ISSUES} more`;
  return text.length > MAX_PAYLOAD_MESSAGE ? `${text.slice(0, MAX_PAYLOAD_MESSAGE)}…` : text;
}

/**
 * Declares a hook for one event. The handler is handed the event's payload,
 * typed and already checked against the event's schema, and answers the
 * event's verdict, {@linkcode proceed}, or {@linkcode unhandled}. A field the
 * event's verdict does not take is a type error naming it (`R`, the handler's
 * reply as written, is inferred only for that check).
 *
 * @example
 * ```ts
 * import { decodeArgs, hook, proceed, v } from "@tether/ext";
 *
 * export const hooks = {
 *   // A guard: `call.arguments` is whatever JSON the model sent, so decode it.
 *   tool_call: hook("tool_call", (call) => {
 *     if (call.tool !== "sh") return proceed;
 *     const { command } = decodeArgs(v.object({ command: v.string() }), call.arguments);
 *     return /\brm\s+-rf\b/.test(command) ? { block: "rm -rf is not allowed here" } : proceed;
 *   }),
 *   // Context: a line the model reads before the next turn.
 *   context: hook("context", (payload) => ({
 *     context: `${payload.messages.length} messages so far; answer in French.`,
 *   })),
 * };
 * ```
 */
export function hook<E extends HookEvent, R extends HookReply<E> & NotVerdictFields<StrayFields<R, E>>>(
  event: E,
  run: (payload: EventPayload<E>, ctx: Ctx) => R | Promise<R>,
): Hook<E> {
  const schema = EventPayloads[event];
  const answer = async (payload: unknown, ctx: Ctx): Promise<HookOutcome> => {
    const parsed = v.safeParse(schema, payload, { abortEarly: false });
    if (!parsed.success) throw new BadArguments(describePayloadIssues(parsed.issues));
    const reply = await run(parsed.output, ctx);
    if (reply === unhandled) return { unhandled: true };
    return { unhandled: false, verdict: reply };
  };
  return Object.freeze({ event, run, answer });
}

/**
 * One `[[hook]]` row as the generated entry passes it: the event name the
 * manifest declared travels beside the hook, and `answer` checks the two agree.
 *
 * @example
 * ```ts
 * import { answer, hook, proceed, type Declared } from "@tether/ext";
 * const rows: Declared[] = [["session_start", hook("session_start", () => proceed)]];
 * await answer(
 *   { hooks: rows },
 *   { kind: "event", name: "session_start", args: '{"session_id":"s1","workspace":"/w","source":"cli"}' },
 * );
 * // { ok: true, value: "{}" }
 * ```
 */
export type Declared = readonly [event: string, hook: AnyHook];
