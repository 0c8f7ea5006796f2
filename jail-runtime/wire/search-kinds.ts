/**
 * Search providers (`[[search]]`): what a session's search asks of one
 * provider (kind `search`) and what it answers, and what the `search.query`
 * capability takes and answers, defined once as valibot schemas for the SDK
 * and the broker. Both travel as JSON text, bounded: the query, the options,
 * the number of results and every text in them.
 */
import * as v from "valibot";

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const Name = v.pipe(v.string(), v.maxLength(256));

/** The longest query, in characters. */
export const MAX_SEARCH_QUERY = 4096;
/** The most results one provider (or one search) answers. */
export const MAX_SEARCH_RESULTS = 100;
/** How many results a search asks for when its options name no `limit`. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** The longest result title, URL and snippet, in characters. */
export const MAX_RESULT_TITLE = 512;
export const MAX_RESULT_URL = 2048;
export const MAX_RESULT_SNIPPET = 4096;

/** A query: one to MAX_SEARCH_QUERY characters, not only white space. */
export const SearchQuery = v.pipe(
  v.string(),
  v.maxLength(MAX_SEARCH_QUERY, `expected a query of at most ${MAX_SEARCH_QUERY} characters`),
  v.check((q) => q.trim().length > 0, "expected a query with something in it (not empty, not only spaces)"),
);

/** What a caller may ask of a search beside the query. */
export const SearchOptions = v.strictObject({
  /** The most results wanted: 1 to 100 (default 10); each provider is asked for as many. */
  limit: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1, `expected a limit of 1 to ${MAX_SEARCH_RESULTS}`),
      v.maxValue(MAX_SEARCH_RESULTS, `expected a limit of 1 to ${MAX_SEARCH_RESULTS}`),
    ),
    DEFAULT_SEARCH_LIMIT,
  ),
});
export type SearchOptions = v.InferOutput<typeof SearchOptions>;
export type SearchOptionsInput = v.InferInput<typeof SearchOptions>;

/** One result, as a provider answers it. */
export const SearchResult = v.strictObject({
  title: Text(MAX_RESULT_TITLE),
  url: v.optional(Text(MAX_RESULT_URL)),
  snippet: v.optional(Text(MAX_RESULT_SNIPPET)),
  /** The provider's own relevance; providers' scores are not comparable and the broker does not sort by them. */
  score: v.optional(v.pipe(v.number(), v.finite())),
});
export type SearchResult = v.InferOutput<typeof SearchResult>;

/** The payload of kind `search`: the session asking, the provider's name, the query and its options. */
export const SearchPayload = v.object({
  session_id: Name,
  provider: Name,
  query: SearchQuery,
  options: SearchOptions,
});
export type SearchPayload = v.InferOutput<typeof SearchPayload>;

/** A provider's answer, whole: at most `MAX_SEARCH_RESULTS` results. */
export const SearchAnswer = v.strictObject({
  results: v.pipe(v.array(SearchResult), v.maxLength(MAX_SEARCH_RESULTS)),
});
export type SearchAnswer = v.InferOutput<typeof SearchAnswer>;

/** A provider as a route or the capability's caller is told of it. */
export const SearchProviderInfo = v.object({
  name: Name,
  extension: Name,
  description: Text(4096),
});
export type SearchProviderInfo = v.InferOutput<typeof SearchProviderInfo>;

/** What the `search.query` capability takes. */
export const SearchQueryArgs = v.strictObject({
  query: SearchQuery,
  options: v.optional(SearchOptions, {}),
});

/** One merged result: a provider's, with who answered it. */
export const MergedResult = v.strictObject({
  ...SearchResult.entries,
  provider: Name,
  extension: Name,
});
export type MergedResult = v.InferOutput<typeof MergedResult>;

/** What the `search.query` capability answers: the merged results and a note per provider that failed. */
export const SearchQueryReply = v.strictObject({
  results: v.pipe(v.array(MergedResult), v.maxLength(MAX_SEARCH_RESULTS)),
  notes: v.pipe(v.array(Text(1024)), v.maxLength(MAX_SEARCH_RESULTS + 8)),
});
export type SearchQueryReply = v.InferOutput<typeof SearchQueryReply>;
