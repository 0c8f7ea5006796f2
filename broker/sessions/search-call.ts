/**
 * A session's search: the query asked of **every** provider the session may
 * ask (search-providers.ts: its active extensions' approved `[[search]]`
 * rows, in preference order, excluded ones left out), all at once, each one
 * invocation of kind `search` in its own satellite under its own time limit.
 * The answers are merged **round-robin in rank order** — the first result of
 * each provider in rank order, then the second of each, and so on — a result
 * whose URL an earlier one already has is dropped (the higher-ranked provider
 * keeps it), and the whole is cut at the options' `limit`. Providers' scores
 * are not comparable, so the broker never sorts by them; it keeps each
 * provider's own order.
 *
 * Never rejects for an extension's fault: a provider that throws, answers
 * what its kind does not hold or passes its time limit is a note and its row
 * in `providers`, and the others' results stand. Asked from the `search.query`
 * capability, the asking extension's own providers are left out (its
 * satellite is busy with the call that asks).
 */
import { describeChain, type WaitChain, waits } from "../base/waits.js";
import * as v from "valibot";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import {
  type MergedResult,
  SearchOptions,
  type SearchPayload,
  SearchQuery,
  type SearchResult,
} from "../../jail-runtime/wire/search-kinds.js";
import { TetherError, WireCode } from "../base/errors.js";
import type { SessionScope } from "../kernel/session-scope.js";
import { decodeSessionAnswer } from "./ask-session-kind.js";
import type { SearchProviderEntry, SessionSearchProviders } from "./search-providers.js";

/** How one provider's part of a search went. */
export type ProviderOutcome =
  | {
      readonly name: string;
      readonly extension: string;
      readonly ok: true;
      readonly results: number;
      readonly invocationId: number | null;
    }
  | {
      readonly name: string;
      readonly extension: string;
      readonly ok: false;
      readonly error: { readonly code: string; readonly msg: string };
      readonly invocationId: number | null;
    };

/** What one search came to. */
export interface SearchReport {
  /** Merged round-robin in rank order, URLs once, at most `limit`; each names its provider and extension. */
  readonly results: readonly MergedResult[];
  /** Each provider asked, in rank order, with how it went. */
  readonly providers: readonly ProviderOutcome[];
  /** A line per provider that failed, per provider left out, and when none could be asked. */
  readonly notes: readonly string[];
}

export interface SearchParts {
  readonly scope: SessionScope;
  /** The providers as the session's preference ranks them now. */
  readonly providers: () => SessionSearchProviders;
}

export interface SearchCallOptions {
  /** The extension asking through `search.query`: its own providers are not asked. */
  readonly asker?: string;
  readonly signal?: AbortSignal;
  /** The satellites waiting on the search (broker/base/waits.ts): their providers are not asked either. */
  readonly chain?: WaitChain;
}

/** The query and options checked; throws `bad_arguments` naming what to change. */
export function checkSearchInput(query: unknown, options: unknown): { query: string; options: SearchOptions } {
  const q = v.safeParse(SearchQuery, query);
  if (!q.success) throw new TetherError(WireCode.badArguments, `Not a search query: ${describeIssues(q.issues)}`);
  const o = v.safeParse(SearchOptions, options ?? {});
  if (!o.success) throw new TetherError(WireCode.badArguments, `Not search options: ${describeIssues(o.issues)}`);
  return { query: q.output, options: o.output };
}

/** Longest failure text kept in a note. */
const MAX_PROBLEM = 500;
const bounded = (text: string) => (text.length > MAX_PROBLEM ? `${text.slice(0, MAX_PROBLEM)}…` : text);

/** Asks one provider; never rejects. */
async function askOne(
  scope: SessionScope,
  provider: SearchProviderEntry,
  payload: SearchPayload,
  call: SearchCallOptions,
): Promise<{ outcome: ProviderOutcome; results: readonly SearchResult[] }> {
  const base = { name: provider.name, extension: provider.extension };
  const failed = (code: string, msg: string, invocationId: number | null) => ({
    outcome: { ...base, ok: false as const, error: { code, msg: bounded(msg) }, invocationId },
    results: [],
  });
  let result;
  try {
    result = await scope.invoke(provider.extension, "search", provider.name, JSON.stringify(payload), {
      ...(call.signal !== undefined ? { signal: call.signal } : {}),
      ...(call.chain !== undefined ? { chain: call.chain } : {}),
    });
  } catch (err) {
    // The broker's own refusals (closed, not approved any more) are outcomes too.
    return failed(err instanceof TetherError ? err.code : WireCode.crashed, (err as Error).message, null);
  }
  const { outcome, invocationId } = result;
  if (!outcome.ok) return failed(outcome.error.code, outcome.error.msg, invocationId);
  const decoded = decodeSessionAnswer("search", outcome.value);
  if (!decoded.ok) {
    const [code, ...rest] = decoded.problem.split(": ");
    return failed(code ?? WireCode.crashed, rest.join(": "), invocationId);
  }
  return {
    outcome: { ...base, ok: true, results: decoded.answer.results.length, invocationId },
    results: decoded.answer.results,
  };
}

/** Round-robin in rank order, each URL once, at most `limit`. */
export function mergeResults(
  answered: readonly { provider: SearchProviderEntry; results: readonly SearchResult[] }[],
  limit: number,
): MergedResult[] {
  const merged: MergedResult[] = [];
  const urls = new Set<string>();
  const longest = Math.max(0, ...answered.map((a) => a.results.length));
  for (let i = 0; i < longest && merged.length < limit; i++) {
    for (const { provider, results } of answered) {
      const result = results[i];
      if (result === undefined) continue;
      if (result.url !== undefined) {
        if (urls.has(result.url)) continue;
        urls.add(result.url);
      }
      merged.push({ ...result, provider: provider.name, extension: provider.extension });
      if (merged.length >= limit) break;
    }
  }
  return merged;
}

/** Searches the session's providers (see the file's comment); the input was checked (`checkSearchInput`). */
export async function sessionSearch(
  parts: SearchParts,
  query: string,
  options: SearchOptions,
  call: SearchCallOptions = {},
): Promise<SearchReport> {
  const ranked = parts.providers();
  const notes: string[] = [...ranked.notes, ...ranked.unavailable.map((u) => u.reason)];
  const waiting = (p: SearchProviderEntry) => waits(call.chain, parts.scope.id, p.extension);
  const asked = ranked.providers.filter((p) => p.extension !== call.asker && !waiting(p));
  for (const p of ranked.providers)
    if (p.extension === call.asker)
      notes.push(
        `search provider '${p.name}' was not asked: it belongs to '${p.extension}', the extension searching ` +
          `(its satellite is busy with the call that asks)`,
      );
    else if (waiting(p))
      notes.push(
        `search provider '${p.name}' was not asked: '${p.extension}' waits on this search ` +
          `(${describeChain(call.chain ?? [])})`,
      );
  if (asked.length === 0) {
    notes.push("no search provider is active in this session to ask");
    return { results: [], providers: [], notes };
  }
  const answers = await Promise.all(
    asked.map((provider) =>
      askOne(parts.scope, provider, { session_id: parts.scope.id, provider: provider.name, query, options }, call).then(
        (answer) => ({ provider, ...answer }),
      ),
    ),
  );
  for (const { outcome } of answers)
    if (!outcome.ok)
      notes.push(
        `search provider '${outcome.name}' of '${outcome.extension}' failed: ` +
          `${outcome.error.code}: ${outcome.error.msg}`,
      );
  return {
    results: mergeResults(
      answers.filter((a) => a.outcome.ok),
      options.limit,
    ),
    providers: answers.map((a) => a.outcome),
    notes,
  };
}
