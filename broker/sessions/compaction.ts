/**
 * Compaction: the harness hands the conversation to a `[[compaction]]`
 * strategy, which answers a summary and the folds it made (ranges of messages
 * and the text that stands for each). `before_compact` hooks are asked first —
 * their text reaches the strategy, they cannot veto. The answer is checked
 * whole (ranges inside the conversation, `from <= to`, no overlaps, the summary
 * within the budget); a strategy that fails, passes its time limit or answers
 * what does not fit leaves the conversation as it was: nothing is stored.
 *
 * Which strategy: the one the caller names, else the session's preference
 * (`preferStrategy`, saved in the store), else the first active one in registry
 * order.
 */
import * as v from "valibot";
import {
  DocumentBoundsError,
  JSON_BOUNDS,
  parseBoundedJson,
  scanJson,
} from "../../jail-runtime/wire/document-bounds.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import {
  MAX_CONTEXT_BYTES,
  SessionAnswers,
  type Fold,
  type SessionPayload,
} from "../../jail-runtime/wire/session-kinds.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import type { TraceRow } from "../hooks/compose.js";
import type { ScopeCallOptions, SessionScope } from "../kernel/session-scope.js";
import type { FoldsRepository } from "../store/folds-repository.js";
import type { ActiveSet } from "./active-set.js";
import type { SessionBus } from "./bus.js";
import { activeRows, notServedRow, type NamedRow } from "./named-rows.js";

/** The most messages one compaction is handed. */
export const MAX_COMPACT_MESSAGES = 10_000;
/** The most the strategy's payload may hold as JSON text, so it always fits a frame (16 MiB). */
export const MAX_COMPACT_PAYLOAD_BYTES = 8 * 1024 * 1024;
/** The most `before_compact` text a strategy is handed, all hooks together. */
const MAX_HOOK_TEXT = 64 * 1024;

const StrategyName = v.pipe(
  v.string(),
  v.regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "expected a strategy's name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
  ),
);

/** What the harness asks: checked here, at the edge (the library's callers included). */
export const CompactInput = v.strictObject({
  messages: v.pipe(v.array(v.unknown()), v.maxLength(MAX_COMPACT_MESSAGES)),
  /** Why (`threshold`, `overflow`, `requested`, …): what `before_compact` hooks are told. */
  reason: v.pipe(v.string(), v.maxLength(256)),
  /** The most characters the summary may have (never more than 64 KiB is taken). */
  budget: v.pipe(v.number(), v.integer(), v.minValue(1)),
  /** This strategy, rather than the session's preferred one. */
  strategy: v.optional(StrategyName),
});
export type CompactInput = v.InferInput<typeof CompactInput>;

/** What one compaction came to. */
export interface CompactReport {
  readonly outcome:
    | { readonly ok: true; readonly compactionId: number; readonly summary: string; readonly folds: readonly Fold[] }
    | Failure;
  readonly strategy: string | null;
  readonly extension: string | null;
  /** What the `before_compact` hooks asked the strategy to keep, in registry order. */
  readonly hookText: readonly string[];
  readonly notes: readonly string[];
  /** The `before_compact` hooks' answers. */
  readonly trace: readonly TraceRow[];
}

/** What the observers are told after a compaction's folds were stored. */
export interface Compacted {
  readonly session_id: string;
  readonly compaction_id: number;
  readonly strategy: string;
  readonly extension: string;
  readonly reason: string;
  readonly messages: number;
  readonly folds: number;
  readonly summary_chars: number;
}

export interface CompactionParts {
  readonly scope: SessionScope;
  readonly active: ActiveSet;
  readonly bus: SessionBus;
  readonly folds: FoldsRepository;
  /** Told after a compaction's folds were stored; a listener's failure changes nothing. */
  readonly onCompacted?: (data: Compacted) => void;
}

/** The strategy a compaction uses, or why none; `note` when the saved preference could not be honoured. */
export function chooseStrategy(
  parts: Pick<CompactionParts, "scope" | "active" | "folds">,
  named?: string,
): { row: NamedRow; note: string | null } | Failure {
  const rows = activeRows(parts.active, "compaction");
  if (named !== undefined) {
    const row = rows.find((r) => r.name === named);
    return row !== undefined ? { row, note: null } : notServedRow(parts.active, "compaction", named);
  }
  if (rows.length === 0) return failure(BrokerCode.inactive, "no compaction strategy is active in this session");
  const preferred = parts.folds.preferredStrategy(parts.scope.id);
  if (preferred === null) return { row: rows[0]!, note: null };
  const row = rows.find((r) => r.name === preferred);
  if (row !== undefined) return { row, note: null };
  return {
    row: rows[0]!,
    note: `the preferred compaction strategy '${preferred}' is not active in this session; '${rows[0]!.name}' was used`,
  };
}

/** Compacts the conversation; never rejects for an extension's faults. */
export async function compact(
  parts: CompactionParts,
  input: CompactInput,
  options: ScopeCallOptions = {},
): Promise<CompactReport> {
  parts.active.refresh();
  const checked = v.safeParse(CompactInput, input);
  if (!checked.success) throw new TetherError(WireCode.badArguments, `compact: ${describeIssues(checked.issues)}`);
  const { messages, reason, budget } = checked.output;
  const empty = { strategy: null, extension: null, hookText: [], notes: [], trace: [] };
  const chosen = chooseStrategy(parts, checked.output.strategy);
  if ("ok" in chosen) return { ...empty, outcome: chosen };
  const { name: strategy, extension } = chosen.row;
  const named = { ...empty, strategy, extension };

  const hooks = await parts.bus.fire("before_compact", { reason });
  // Each hook's added text is its trace row's detail ("context" for before_compact), bounded in all.
  const hookText: string[] = [];
  let room = MAX_HOOK_TEXT;
  for (const row of hooks.trace) {
    if (row.answer !== "context" || row.detail.length > room) continue;
    hookText.push(row.detail);
    room -= row.detail.length;
  }
  const notes = [...hooks.notes, ...(chosen.note !== null ? [chosen.note] : [])];
  const told = { ...named, hookText, notes, trace: hooks.trace };

  const payload: SessionPayload<"compact"> = {
    session_id: parts.scope.id,
    strategy,
    reason,
    budget,
    messages,
    hook_text: hookText,
  };
  const text = JSON.stringify(payload);
  try {
    if (Buffer.byteLength(text, "utf8") > MAX_COMPACT_PAYLOAD_BYTES)
      throw new DocumentBoundsError("length", `over ${MAX_COMPACT_PAYLOAD_BYTES} bytes as JSON`);
    scanJson(text, JSON_BOUNDS);
  } catch (err) {
    if (!(err instanceof DocumentBoundsError)) throw err;
    return {
      ...told,
      outcome: failure(WireCode.badArguments, `compact: the conversation is ${err.message}; nothing was folded`),
    };
  }

  const said = `compaction strategy '${strategy}' of '${extension}'`;
  const unchanged = "; the conversation is unchanged";
  let result;
  try {
    result = await parts.scope.invoke(extension, "compact", strategy, text, options);
  } catch (err) {
    if (!(err instanceof TetherError)) throw err;
    return { ...told, outcome: failure(err.code, `${said}: ${err.message}${unchanged}`) };
  }
  if (!result.outcome.ok)
    return {
      ...told,
      outcome: failure(result.outcome.error.code, `${said} failed: ${result.outcome.error.msg}${unchanged}`),
    };
  const answer = answerOf(result.outcome.value, messages.length, Math.min(budget, MAX_CONTEXT_BYTES));
  if ("problem" in answer)
    return { ...told, outcome: failure(WireCode.crashed, `${said} ${answer.problem}${unchanged}`) };

  const compactionId = result.invocationId!;
  parts.folds.insert(parts.scope.id, compactionId, strategy, extension, answer.folds);
  try {
    parts.onCompacted?.({
      session_id: parts.scope.id,
      compaction_id: compactionId,
      strategy,
      extension,
      reason,
      messages: messages.length,
      folds: answer.folds.length,
      summary_chars: answer.summary.length,
    });
  } catch {
    // An observer's trouble is its own: the compaction stands.
  }
  return { ...told, outcome: { ok: true, compactionId, summary: answer.summary, folds: answer.folds } };
}

/** The strategy's answer, checked whole: its shape, the summary's length, and its folds against the conversation. */
export function answerOf(
  value: string,
  count: number,
  summaryLimit: number,
): { summary: string; folds: Fold[] } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(value);
  } catch (err) {
    return { problem: `answered something that is ${err instanceof DocumentBoundsError ? err.message : "not JSON"}` };
  }
  const checked = v.safeParse(SessionAnswers.compact, parsed);
  if (!checked.success) return { problem: `answered what it may not: ${describeIssues(checked.issues)}` };
  const { summary, folds } = checked.output;
  if (summary.length > summaryLimit)
    return { problem: `answered a summary of ${summary.length} characters; the budget is ${summaryLimit}` };
  const sorted = [...folds].sort((a, b) => a.from - b.from);
  for (const [i, fold] of sorted.entries()) {
    const at = `fold ${fold.from}..${fold.to}`;
    if (fold.from > fold.to) return { problem: `answered ${at}, which ends before it starts` };
    if (fold.to >= count)
      return { problem: `answered ${at}, past the conversation's end (it has ${count} messages, from 0)` };
    const prev = sorted[i - 1];
    if (prev !== undefined && fold.from <= prev.to)
      return { problem: `answered folds that overlap: ${prev.from}..${prev.to} and ${fold.from}..${fold.to}` };
  }
  return { summary, folds: sorted };
}
