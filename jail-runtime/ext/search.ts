/**
 * Search providers (`[[search]]`): what a module exports as `search`. Each is
 * handed a query and its options (payload `search`,
 * jail-runtime/wire/search-kinds.ts) for a session it is active in, and
 * answers results — an array, which the SDK wraps as `{results}` and checks
 * whole (at most 100, each `{title, url?, snippet?, score?}`, bounded).
 *
 * @example
 * ```ts
 * import type { SearchProvider } from "@tether/ext";
 * export const search: Record<string, SearchProvider> = {
 *   docs: (query, options) => [{ title: `Docs about ${query}`, snippet: `${options.limit} at most` }],
 * };
 * ```
 */
import type { Ctx } from "./ctx.js";
import type { SearchOptions, SearchResult } from "../wire/search-kinds.js";

type Returns<T> = T | Promise<T>;

/** A search's options as a provider is handed them: the caller's, with the session and the provider's name. */
export type SearchProviderOptions = SearchOptions & { readonly session_id: string; readonly provider: string };

/** A search provider: a query in, its results out (best first; the broker keeps their order). */
export type SearchProvider = (
  query: string,
  options: SearchProviderOptions,
  ctx: Ctx,
) => Returns<readonly SearchResult[]>;
