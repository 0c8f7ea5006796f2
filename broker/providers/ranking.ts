/**
 * A session's view of the providers: its saved preference (`rank`: names to
 * try first, in order; `exclude`: names it never uses) applied to the
 * catalog. A preference only orders and removes what is eligible: ranking a
 * provider that is not served enables nothing, and is said in a note.
 */
import * as v from "valibot";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import { WireCode, TetherError } from "../base/errors.js";
import type { RankPreference as ProviderPreference } from "../store/rank-preferences-repository.js";
import type { ProviderCatalog, ProviderEntry } from "./catalog.js";

const ProviderName = v.pipe(
  v.string(),
  v.regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "expected a provider's name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
  ),
);

/** What a caller may save: two lists of provider names, at most 256 each. */
export const ProviderPreferenceInput = v.strictObject({
  rank: v.optional(v.pipe(v.array(ProviderName), v.maxLength(256)), []),
  exclude: v.optional(v.pipe(v.array(ProviderName), v.maxLength(256)), []),
});

/** Checks a preference from a caller; throws `bad_arguments` naming the field. */
export function checkProviderPreference(input: unknown): ProviderPreference {
  const checked = v.safeParse(ProviderPreferenceInput, input);
  if (!checked.success)
    throw new TetherError(WireCode.badArguments, `Not a provider preference: ${describeIssues(checked.issues)}`);
  const { rank, exclude } = checked.output;
  const both = rank.filter((name) => exclude.includes(name));
  if (both.length > 0)
    throw new TetherError(
      WireCode.badArguments,
      `A provider cannot be both ranked and excluded: ${both.join(", ")}; drop it from one list`,
    );
  return { rank: [...new Set(rank)], exclude: [...new Set(exclude)] };
}

export interface RankedProviders {
  /** Ranked names first (in the preference's order), then the rest in registry order; excluded ones left out. */
  readonly providers: readonly ProviderEntry[];
  /** Eligible providers this session excludes. */
  readonly excluded: readonly string[];
  readonly preference: ProviderPreference | null;
  /** Names the preference mentions that are not served (they change nothing). */
  readonly notes: readonly string[];
}

export function rankProviders(catalog: ProviderCatalog, preference: ProviderPreference | null): RankedProviders {
  const all = catalog.providers;
  if (preference === null) return { providers: all, excluded: [], preference, notes: [] };
  const served = new Set(all.map((p) => p.name));
  const notes = [...preference.rank, ...preference.exclude]
    .filter((name) => !served.has(name))
    .map(
      (name) =>
        `provider '${name}' is named in this session's preference but is not served ` +
        `(not installed, not approved, or its extension is turned off globally)`,
    );
  const kept = all.filter((p) => !preference.exclude.includes(p.name));
  const position = (p: ProviderEntry) => {
    const at = preference.rank.indexOf(p.name);
    return at < 0 ? preference.rank.length : at;
  };
  // Array.prototype.sort is stable: the unranked keep registry order.
  const providers = [...kept].sort((a, b) => position(a) - position(b));
  return {
    providers,
    excluded: all.filter((p) => preference.exclude.includes(p.name)).map((p) => p.name),
    preference,
    notes,
  };
}
