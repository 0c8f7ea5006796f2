/**
 * `search`: asks the session's search providers — the `[[search]]` providers
 * of the extensions active in the current session, in its preference's order,
 * excluded ones left out — and answers their results merged round-robin in
 * rank order (docs/search.md). The manifest must ask for it with
 * `[capabilities] search = true`; each call is judged and audited. The
 * extension's own providers are not asked (its satellite is busy with the
 * call that asks), and a search provider may not search from inside a search.
 */
import { callCap } from "./invocation.js";
import { jsonParse } from "./intrinsics.js";

/** One result: a provider's, with which provider (and extension) answered it. */
export interface SearchHit {
  readonly title: string;
  readonly url?: string;
  readonly snippet?: string;
  readonly score?: number;
  readonly provider: string;
  readonly extension: string;
}

/** The merged results, and a note for each provider that failed or was left out. */
export interface SearchAnswer {
  readonly results: SearchHit[];
  readonly notes: string[];
}

/**
 * Searches: `query` (1 to 4096 characters), `options.limit` (1 to 100, default
 * 10) the most results wanted. A provider's failure is a note, never a throw;
 * a refusal (not declared, no session) throws a `CapError`.
 *
 * @example
 * ```ts
 * import { search } from "@tether/cap";
 * const { results, notes } = await search.query("deno permissions", { limit: 5 });
 * ```
 */
export async function query(query: string, options: { limit?: number } = {}): Promise<SearchAnswer> {
  const answer = (await callCap("search.query", { query: String(query), options })) as { json: string };
  return jsonParse(answer.json) as SearchAnswer;
}
