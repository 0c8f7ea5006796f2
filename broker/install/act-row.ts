/**
 * A manifest's `[[act]]` rows: the acts of its own an extension may report to
 * the session's hooks (`ctx.act`, docs/hooks.md "Reported acts") — each a
 * name (lowercase words joined by dots, `mail.submit`), a description the
 * operator reads at review, and optional `parameters`, a JSON Schema the
 * arguments it reports and every hook's rewrite must fit. Granted by the
 * approval; a new one widens an upgrade.
 */
import type { Ajv } from "ajv";
import { ajvClass } from "../base/ajv.js";
import * as v from "valibot";
import { ActName } from "../../jail-runtime/wire/act-args.js";
import { BrokerCode, TetherError } from "../base/errors.js";

/** The most `[[act]]` rows one manifest may have. */
export const MAX_ACTS = 64;

/** An `[[act]]`: one act the extension may report. */
export const ActRow = v.strictObject({
  name: ActName,
  description: v.pipe(v.string(), v.minLength(1, "expected a description of the act"), v.maxLength(4096)),
  /** The arguments' JSON Schema (draft-07); none: any JSON. */
  parameters: v.optional(v.record(v.string(), v.unknown())),
});
export type ActRow = v.InferOutput<typeof ActRow>;

/** The `[[act]]` rows: at most MAX_ACTS (that no name is there twice is `checkActRows`, after the schema). */
export const ActRows = v.pipe(v.array(ActRow), v.maxLength(MAX_ACTS, `expected at most ${MAX_ACTS} [[act]] rows`));

/** Refuses an act declared twice, naming it (parseManifest calls it after the schema). */
export function checkActRows(rows: readonly ActRow[], file: string): void {
  const seen = new Set<string>();
  for (const row of rows) {
    if (seen.has(row.name))
      throw new TetherError(
        BrokerCode.installFailed,
        `${file}: act '${row.name}' is declared twice; give each [[act]] its own name`,
      );
    seen.add(row.name);
  }
}

/** Each act whose `parameters` does not compile as JSON Schema, naming the row. */
export function actSchemaProblems(
  rows: readonly ActRow[],
  file: string,
  ajv: Ajv = new (ajvClass())({ allErrors: true, strict: false }),
): string[] {
  const problems: string[] = [];
  for (const [i, row] of rows.entries()) {
    if (row.parameters === undefined) continue;
    try {
      ajv.compile(row.parameters);
    } catch (err) {
      problems.push(
        `${file}: act.${i}.parameters (act '${row.name}') is not a valid JSON Schema: ${(err as Error).message}`,
      );
    }
  }
  return problems;
}

/** What `tether review` says of each act (`tag`: "   [NEW]" on an upgrade that adds it). */
export function actReviewLines(rows: readonly ActRow[], tag: (item: string) => string): string[] {
  return rows.map(
    (row) =>
      `It reports act ${row.name}: ${row.description} (the session's tool_call and tool_result hooks see its ` +
      `arguments and output, and may block it)${tag(`act ${row.name}`)}`,
  );
}
