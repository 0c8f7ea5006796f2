/**
 * The hook bus's composition rule, as one function over the hooks of one event,
 * asked in registry order (see broker/sessions/order.ts):
 *
 * - the first `block`, the first argument rewrite and the first `halt` win;
 * - `context` texts and `notes` add up, in order;
 * - `context` message transforms chain: each hook sees the messages the one
 *   before it returned;
 * - a `tool_call` hook may answer a substitute `result` instead of running the
 *   tool (the first wins);
 * - a rewrite is re-validated against the tool's schema: one that does not
 *   validate is refused and noted, never silently dropped;
 * - `before_compact` may add bounded text but never veto;
 * - `usage` answers are ignored (notify-only);
 * - `unhandled` means nothing happened;
 * - a hook that crashed or timed out becomes a note, or a block when its
 *   manifest row says `on_error = "block"`.
 * Every hook's answer is traced (which extension, what, how long).
 *
 * Groundwork for the hook bus (issue 5): pure, so its properties are tested
 * with fast-check over in-process hooks.
 */

export type BusEvent =
  | "session_start"
  | "before_agent_start"
  | "context"
  | "tool_call"
  | "tool_result"
  | "agent_end"
  | "agent_settled"
  | "before_compact"
  | "usage"
  | "cap_call"
  | "route_call";

/** What one hook answered (already decoded from its JSON text). */
export interface Verdict {
  readonly block?: string;
  readonly arguments?: unknown;
  readonly context?: string;
  readonly notes?: readonly string[];
  readonly halt?: string;
  /** `context` only: the transformed conversation messages. */
  readonly messages?: readonly unknown[];
  /** `tool_call` only: a substitute result; the tool does not run. */
  readonly result?: unknown;
  /** `before_compact` only: text for the summariser. */
  readonly text?: string;
}

/** `invocationId`: the hook's own ledger row, when it ran in a satellite. */
export type HookAnswer =
  | { readonly kind: "verdict"; readonly verdict: Verdict; readonly invocationId?: number }
  | { readonly kind: "unhandled"; readonly invocationId?: number }
  | { readonly kind: "failed"; readonly reason: string; readonly invocationId?: number };

export interface BusHook {
  readonly extension: string;
  readonly onError: "note" | "block";
  /** Asks the hook; `messages` is the chain so far (for `context`). */
  readonly ask: (messages: readonly unknown[] | undefined) => Promise<HookAnswer>;
}

export interface TraceRow {
  readonly extension: string;
  readonly answer:
    | "unhandled"
    | "failed"
    | "proceed"
    | "block"
    | "rewrite"
    | "halt"
    | "result"
    | "context"
    | "messages"
    | "notes"
    | "ignored"
    | "refused-rewrite";
  readonly durationMs: number;
  /** Why: the block or halt reason, the failure, the refused rewrite's problem, the context or notes. */
  readonly detail: string;
  /** The hook's own ledger row, when it ran in a satellite. */
  readonly invocationId: number | null;
}

export interface Composed {
  readonly block: { readonly reason: string; readonly by: string } | null;
  readonly rewrite: { readonly arguments: unknown; readonly by: string } | null;
  readonly halt: { readonly reason: string; readonly by: string } | null;
  readonly result: { readonly value: unknown; readonly by: string } | null;
  readonly context: readonly string[];
  readonly notes: readonly string[];
  /** `context` only: the messages after every transform. */
  readonly messages: readonly unknown[] | undefined;
  /** `before_compact` only: the added text, bounded. */
  readonly compactText: string;
  readonly trace: readonly TraceRow[];
}

export interface ComposeOptions {
  /** Checks a rewrite against the tool's schema: null when valid, else why not. */
  readonly validateArguments?: (args: unknown) => string | null;
  /** The bound on `before_compact` text, in characters. */
  readonly compactLimit?: number;
  /** The conversation messages a `context` chain starts from. */
  readonly messages?: readonly unknown[];
  readonly now?: () => number;
}

/** What no hook at all composes to (an event nobody hooks need not be composed). */
export const NOTHING_COMPOSED: Composed = Object.freeze({
  block: null,
  rewrite: null,
  halt: null,
  result: null,
  context: Object.freeze([]),
  notes: Object.freeze([]),
  messages: undefined,
  compactText: "",
  trace: Object.freeze([]),
});

/** Asks every hook in order and composes their answers. */
export async function compose(
  event: BusEvent,
  hooks: readonly BusHook[],
  options: ComposeOptions = {},
): Promise<Composed> {
  const now = options.now ?? (() => performance.now());
  const compactLimit = options.compactLimit ?? 4096;
  let block: Composed["block"] = null;
  let rewrite: Composed["rewrite"] = null;
  let halt: Composed["halt"] = null;
  let result: Composed["result"] = null;
  const context: string[] = [];
  const notes: string[] = [];
  let messages = event === "context" ? (options.messages ?? []) : undefined;
  let compactText = "";
  const trace: TraceRow[] = [];

  for (const hook of hooks) {
    const started = now();
    let answer: HookAnswer;
    try {
      answer = await hook.ask(messages);
    } catch (err) {
      answer = { kind: "failed", reason: (err as Error).message };
    }
    const durationMs = now() - started;
    const invocationId = answer.invocationId ?? null;
    let detail = "";
    const row = (what: TraceRow["answer"]) =>
      trace.push({ extension: hook.extension, answer: what, durationMs, detail, invocationId });

    if (answer.kind === "unhandled") {
      row("unhandled");
      continue;
    }
    if (answer.kind === "failed") {
      detail = answer.reason;
      row("failed");
      // usage is notify-only and before_compact can never veto: a failure there is always a note.
      if (hook.onError === "block" && event !== "usage" && event !== "before_compact" && block === null) {
        block = { reason: `${hook.extension}'s hook failed: ${answer.reason}`, by: hook.extension };
      } else {
        notes.push(`${hook.extension}'s hook failed: ${answer.reason}`);
      }
      continue;
    }
    if (event === "usage") {
      row("ignored");
      continue;
    }
    const v = answer.verdict;
    let what: TraceRow["answer"] = "proceed";
    if (event === "before_compact") {
      if (v.text !== undefined && compactText.length < compactLimit) {
        compactText = (compactText + (compactText ? "\n" : "") + v.text).slice(0, compactLimit);
        what = "context";
        detail = v.text;
      }
      if (v.notes) notes.push(...v.notes);
      row(what);
      continue;
    }
    const why: string[] = [];
    if (v.block !== undefined && block === null) {
      block = { reason: v.block, by: hook.extension };
      what = "block";
      why.push(v.block);
    }
    if (v.arguments !== undefined && rewrite === null && event === "tool_call") {
      const invalid = options.validateArguments?.(v.arguments) ?? null;
      if (invalid === null) {
        rewrite = { arguments: v.arguments, by: hook.extension };
        if (what === "proceed") what = "rewrite";
      } else {
        notes.push(`${hook.extension}'s rewrite was refused: ${invalid}`);
        if (what === "proceed") what = "refused-rewrite";
        why.push(`rewrite refused: ${invalid}`);
      }
    }
    if (v.halt !== undefined && halt === null) {
      halt = { reason: v.halt, by: hook.extension };
      if (what === "proceed") what = "halt";
      why.push(`halt: ${v.halt}`);
    }
    if (v.result !== undefined && result === null && event === "tool_call") {
      result = { value: v.result, by: hook.extension };
      if (what === "proceed") what = "result";
    }
    if (v.context !== undefined) {
      context.push(v.context);
      if (what === "proceed") what = "context";
      why.push(v.context);
    }
    if (v.messages !== undefined && event === "context") {
      messages = v.messages;
      if (what === "proceed") what = "messages";
      why.push(`${v.messages.length} messages`);
    }
    if (v.notes !== undefined && v.notes.length > 0) {
      notes.push(...v.notes);
      if (what === "proceed") what = "notes";
      why.push(...v.notes);
    }
    detail = why.join(" | ");
    row(what);
  }
  return { block, rewrite, halt, result, context, notes, messages, compactText, trace };
}
