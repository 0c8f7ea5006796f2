/**
 * A session's search providers: the `[[search]]` rows of its **active**
 * extensions that their approval grants, in registry order (an extension's
 * rows in manifest order), then its saved preference applied — `rank` first,
 * in its order, then the rest in registry order; `exclude` left out. A
 * preference only orders and removes what is eligible: a name no active
 * extension serves changes nothing (a note says so), and nothing here enables
 * an inactive extension — enabling is `session.prefer` and a reload.
 *
 * Two active extensions that declare one provider name: the earlier in
 * registry order keeps it; the later one's provider is left out, named under
 * `unavailable`.
 */
import * as v from "valibot";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import { TetherError, WireCode } from "../base/errors.js";
import type { RankPreference as SearchPreference } from "../store/rank-preferences-repository.js";
import type { ActiveSet } from "./active-set.js";

const ProviderName = v.pipe(
  v.string(),
  v.regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "expected a search provider's name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
  ),
);

/** What a caller may save: two lists of provider names, at most 256 each. */
export const SearchPreferenceInput = v.strictObject({
  rank: v.optional(v.pipe(v.array(ProviderName), v.maxLength(256)), []),
  exclude: v.optional(v.pipe(v.array(ProviderName), v.maxLength(256)), []),
});

/** Checks a preference from a caller; throws `bad_arguments` naming the field. */
export function checkSearchPreference(input: unknown): SearchPreference {
  const checked = v.safeParse(SearchPreferenceInput, input);
  if (!checked.success)
    throw new TetherError(WireCode.badArguments, `Not a search preference: ${describeIssues(checked.issues)}`);
  const { rank, exclude } = checked.output;
  const both = rank.filter((name) => exclude.includes(name));
  if (both.length > 0)
    throw new TetherError(
      WireCode.badArguments,
      `A search provider cannot be both ranked and excluded: ${both.join(", ")}; drop it from one list`,
    );
  return { rank: [...new Set(rank)], exclude: [...new Set(exclude)] };
}

/** One search provider a session may ask. */
export interface SearchProviderEntry {
  readonly name: string;
  readonly extension: string;
  readonly description: string;
  /** Its `[[search]]` row's `deadline_ms`, when it sets one. */
  readonly deadlineMs?: number;
}

export interface SessionSearchProviders {
  /** Ranked names first (in the preference's order), then the rest in registry order; excluded ones left out. */
  readonly providers: readonly SearchProviderEntry[];
  /** Eligible providers this session excludes, by name. */
  readonly excluded: readonly string[];
  /** Providers left out because an earlier extension in registry order serves the name. */
  readonly unavailable: readonly { readonly name: string; readonly extension: string; readonly reason: string }[];
  readonly preference: SearchPreference | null;
  /** Names the preference mentions that no active extension serves here (they change nothing). */
  readonly notes: readonly string[];
}

/** The approved `[[search]]` rows of the session's active extensions, in registry order, one owner per name. */
function eligible(active: ActiveSet): Pick<SessionSearchProviders, "providers" | "unavailable"> {
  const providers: SearchProviderEntry[] = [];
  const unavailable: { name: string; extension: string; reason: string }[] = [];
  const owners = new Map<string, string>();
  for (const extension of active.applied.plan.active) {
    const k = active.applied.known.get(extension);
    const manifest = k?.installed?.manifest;
    // The approval the active set was planned under: served whether or not a satellite is up yet.
    const granted = k?.grants?.searches ?? [];
    if (manifest === undefined) continue;
    for (const row of manifest.search ?? []) {
      if (!granted.includes(row.name)) continue;
      const owner = owners.get(row.name);
      if (owner !== undefined) {
        unavailable.push({
          name: row.name,
          extension,
          reason:
            `search provider '${row.name}' is also served by '${owner}', which comes first in registry order; ` +
            `rename it, or set a lower priority`,
        });
        continue;
      }
      owners.set(row.name, extension);
      providers.push({
        name: row.name,
        extension,
        description: row.description,
        ...(row.deadline_ms !== undefined ? { deadlineMs: row.deadline_ms } : {}),
      });
    }
  }
  return { providers, unavailable };
}

/** The session's search providers as its preference ranks them (`preference`: the saved one, or null). */
export function searchProvidersOf(active: ActiveSet, preference: SearchPreference | null): SessionSearchProviders {
  const { providers: all, unavailable } = eligible(active);
  if (preference === null) return { providers: all, excluded: [], unavailable, preference, notes: [] };
  const served = new Set(all.map((p) => p.name));
  const notes = [...preference.rank, ...preference.exclude]
    .filter((name) => !served.has(name))
    .map(
      (name) =>
        `search provider '${name}' is named in this session's preference but no extension active here serves it ` +
        `(a preference enables nothing: enable its extension with session.prefer and reload)`,
    );
  const position = (p: SearchProviderEntry) => {
    const at = preference.rank.indexOf(p.name);
    return at < 0 ? preference.rank.length : at;
  };
  // Array.prototype.sort is stable: the unranked keep registry order.
  const providers = all.filter((p) => !preference.exclude.includes(p.name)).sort((a, b) => position(a) - position(b));
  return {
    providers,
    excluded: all.filter((p) => preference.exclude.includes(p.name)).map((p) => p.name),
    unavailable,
    preference,
    notes,
  };
}
