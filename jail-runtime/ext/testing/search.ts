/**
 * The `search` capability in the test kit: `search.query` answered by the
 * results a test scripts — per provider, as the session's providers would in
 * rank order, merged as the broker merges them (round-robin in rank order, a
 * URL once, cut at `limit`) — or refused as the broker refuses an extension
 * whose manifest does not ask for it (`declared: false`).
 */
import * as v from "valibot";
import { SearchQueryArgs, type SearchResult } from "../../wire/search-kinds.js";
import { refused, type CapReply } from "./reply.js";

/** A scripted provider: its results for a query (or a thrown error, which becomes a note). */
export type FakeProvider = (query: string, limit: number) => readonly SearchResult[];

export interface FakeSearchOptions {
  /** The session's providers in rank order, by name. */
  readonly providers?: Readonly<Record<string, FakeProvider>>;
  /** Whether the manifest says `[capabilities] search = true` (default true); false refuses as the broker does. */
  readonly declared?: boolean;
  /** The extension's name, as a refusal names it. */
  readonly name?: string;
}

/** One `search.query` the extension made. */
export interface FakeQuery {
  readonly query: string;
  readonly limit: number;
}

export class FakeSearch {
  /** Every `search.query` served, in order. */
  readonly queries: FakeQuery[] = [];
  readonly #providers: Readonly<Record<string, FakeProvider>>;
  readonly #declared: boolean;
  readonly #name: string;

  constructor(options: FakeSearchOptions = {}) {
    this.#providers = options.providers ?? {};
    this.#declared = options.declared ?? true;
    this.#name = options.name ?? "extension";
  }

  /** Answers one `search.query` as the broker would (its reply is `{json}` of `{results, notes}`). */
  serve(args: unknown): CapReply {
    const parsed = v.safeParse(SearchQueryArgs, args);
    if (!parsed.success)
      return refused("bad_arguments", "args", "search.query takes {query, options?: {limit?: 1-100}}");
    if (!this.#declared)
      return refused(
        "denied",
        "capabilities.search",
        `search.query: '${this.#name}' does not ask for search; add [capabilities] search = true to its ` +
          `manifest, install it again and have the operator approve it`,
      );
    const { query, options } = parsed.output;
    this.queries.push({ query, limit: options.limit });
    const notes: string[] = [];
    const answered: { provider: string; results: readonly SearchResult[] }[] = [];
    for (const [provider, answer] of Object.entries(this.#providers)) {
      try {
        answered.push({ provider, results: answer(query, options.limit) });
      } catch (err) {
        notes.push(`search provider '${provider}' of 'fake' failed: crashed: ${(err as Error).message}`);
      }
    }
    if (Object.keys(this.#providers).length === 0) notes.push("no search provider is active in this session to ask");
    const results: Array<SearchResult & { provider: string; extension: string }> = [];
    const urls = new Set<string>();
    const longest = Math.max(0, ...answered.map((a) => a.results.length));
    for (let i = 0; i < longest && results.length < options.limit; i++) {
      for (const { provider, results: theirs } of answered) {
        const result = theirs[i];
        if (result === undefined || results.length >= options.limit) continue;
        if (result.url !== undefined) {
          if (urls.has(result.url)) continue;
          urls.add(result.url);
        }
        results.push({ ...result, provider, extension: "fake" });
      }
    }
    return { ok: true, value: { json: JSON.stringify({ results, notes }) } };
  }
}
