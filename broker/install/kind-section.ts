/**
 * The manifest section of a kind added beside the built-ins: `[[<kind>]]`
 * rows, each named, checked by the kind's own valibot schema. A section is
 * read only when its kind is registered with the broker (broker/kernel/kinds.ts,
 * `ExtraKind`); any other unknown section is refused as before.
 */
import type * as v from "valibot";

/** What every row of an added kind's section has: a name; a description and a time limit if the kind wants them. */
export interface KindSectionRow {
  readonly name: string;
  readonly description?: string;
  /** Its time limit (never more than `[limits] deadline_ms`; default 5 s). */
  readonly deadline_ms?: number;
}

/** How an added kind's `[[<kind>]]` rows are read and shown. */
export interface KindSection {
  /** One row, checked whole (a `v.strictObject` bounds what it may hold). */
  readonly row: v.GenericSchema<unknown, KindSectionRow>;
  /** The most rows a manifest may declare (default and ceiling 256). */
  readonly maxRows?: number;
  /** What one of its invocations sees and does, for the review line ("sees the name it greets"). */
  readonly sees: string;
}

/** The added kinds' sections as a manifest declares them, by kind: each row, and what review says it sees. */
export type ManifestKinds = Readonly<
  Record<string, { readonly sees: string; readonly rows: readonly KindSectionRow[] }>
>;

/** The sections a manifest may hold beside the built-in ones, by kind (= section) name. */
export type KindSections = ReadonlyMap<string, KindSection>;

/** The most rows one added kind's section may hold. */
export const MAX_KIND_ROWS = 256;
