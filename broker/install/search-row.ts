/**
 * A manifest's `[[search]]` rows — search providers its module's `search`
 * export answers (docs/search.md) — and its `[capabilities]` table, where it
 * asks for capabilities beyond the ones every extension has: `search = true`
 * lets it ask the session's search providers (`search.query`). Both are
 * granted by the approval, and either widens an upgrade.
 */
import * as v from "valibot";

/** A `[[search]]`: a search provider, one key of the module's `search` export. */
export const SearchRow = v.strictObject({
  name: v.pipe(
    v.string(),
    v.regex(
      /^[a-z][a-z0-9_-]{0,63}$/,
      "expected a search provider's name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
    ),
  ),
  description: v.pipe(v.string(), v.maxLength(4096)),
  /** One search's time limit (default 5 s, never more than `[limits] deadline_ms`). */
  deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3_600_000))),
});
export type SearchRow = v.InferOutput<typeof SearchRow>;

/** `[capabilities]`: capabilities it asks for beyond `kv`, `skv`, `log`, `report` and `net.fetch` (by `[net]`). */
export const CapabilitiesTable = v.strictObject({
  /** Ask the session's search providers (`search.query` from `@tether/cap`). */
  search: v.optional(v.boolean(), false),
});

/** The capabilities a `[capabilities]` table asks for, by name (`search`). */
export function capabilitiesOf(table: v.InferOutput<typeof CapabilitiesTable> | undefined): string[] {
  return table?.search === true ? ["search"] : [];
}
