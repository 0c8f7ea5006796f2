/**
 * What a hook on each event is shown and what its verdict can do — the reach
 * an operator approves when they approve a hook. `tether review` prints it
 * under each hooked event; docs/authors.md ("What a hook can see") holds the
 * same sentences, and a test keeps the two equal.
 */
import type { EventName } from "../../jail-runtime/wire/events.js";

export interface HookSight {
  /** What the hook is handed, and whose. */
  readonly sees: string;
  /** What its verdict can change. */
  readonly can: string;
}

/** One row per event: a new event does not compile until it says what its hooks see. */
export const HOOK_SIGHT: Readonly<Record<EventName, HookSight>> = {
  session_start: {
    sees: "the session's id, its workspace path and why it started",
    can: "add context for the model",
  },
  before_agent_start: {
    sees: "every prompt the user sends, in full",
    can: "refuse the prompt, halt the turn, add context",
  },
  context: {
    sees: "the whole conversation before each model request: every message, every tool's result",
    can: "rewrite the messages the model is sent, add context",
  },
  tool_call: {
    sees:
      "every tool call in the session, of every extension, with its arguments, before it runs, and every act an " +
      "extension reports",
    can: "block it, halt the turn, rewrite its arguments, answer in the tool's place",
  },
  tool_result: {
    sees:
      "every tool call's arguments and result, of every extension in the session, after it ran, and every " +
      "reported act's output",
    can: "withhold the result, halt the turn, add context",
  },
  agent_end: {
    sees: "the model's reply at the end of each turn",
    can: "keep the turn going with an instruction, halt it, add context",
  },
  agent_settled: {
    sees: "that a turn is over (nothing else)",
    can: "add notes only",
  },
  before_compact: {
    sees: "that the conversation is about to be compacted, and why",
    can: "add text for the summary (never stop it)",
  },
  usage: {
    sees: "each model request's tokens, model and cost",
    can: "nothing (told only)",
  },
  cap_call: {
    sees:
      "every capability call other extensions make in the session (which capability, the URL without query " +
      "values or the key, and from which tool)",
    can: "refuse that call",
  },
  route_call: {
    sees:
      "every host route the harness calls in the session, of every extension, with its request (up to its first " +
      "65,536 characters), before it runs",
    can: "refuse that route call",
  },
};

/** The lines review prints under a hooked event: `sees: …` and `can: …`; a matcher narrows what it is shown. */
export function sightLines(event: EventName, matched: boolean): string[] {
  const sight = HOOK_SIGHT[event];
  return [`sees: ${sight.sees}${matched ? " — only those its match names" : ""}`, `can:  ${sight.can}`];
}
