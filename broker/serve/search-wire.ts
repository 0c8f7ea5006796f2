/**
 * `tether serve`'s search methods (docs/api.md): their params and the wire
 * shapes of what the library returns — `session.search_providers`,
 * `session.prefer_search`, `session.search` — in snake_case.
 */
import * as v from "valibot";
import type { SearchReport, SessionSearchProviders } from "../sessions/session.js";
import { SearchPreferenceInput } from "../sessions/search-providers.js";

/** The params of the three methods, each beside the `session` it names. */
export function searchParams<S extends v.GenericSchema>(session: S) {
  return {
    "session.search_providers": v.strictObject({ session }),
    "session.prefer_search": v.strictObject({ session, preference: v.nullable(SearchPreferenceInput) }),
    // The query's own bounds are the library's to check and word (bad_arguments); this bounds the frame.
    "session.search": v.strictObject({
      session,
      query: v.pipe(v.string(), v.maxLength(64 * 1024)),
      options: v.optional(v.record(v.string(), v.unknown())),
    }),
  } as const;
}

/** The session's providers in preference order, what it excludes, what a collision left out, the notes. */
export function searchProvidersToWire(p: SessionSearchProviders): unknown {
  return {
    providers: p.providers.map((e) => ({
      name: e.name,
      extension: e.extension,
      description: e.description,
      ...(e.deadlineMs !== undefined ? { deadline_ms: e.deadlineMs } : {}),
    })),
    excluded: p.excluded,
    unavailable: p.unavailable,
    preference: p.preference,
    notes: p.notes,
  };
}

/** One search: the merged results, each provider's outcome (its ledger row as `invocation_id`), the notes. */
export function searchReportToWire(r: SearchReport): unknown {
  return {
    results: r.results,
    providers: r.providers.map(({ invocationId, ...rest }) => ({ ...rest, invocation_id: invocationId })),
    notes: r.notes,
  };
}
