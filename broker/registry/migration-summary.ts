/**
 * What a migration does, in one line per statement, for review: "creates table
 * notes", "adds column notes.pinned", "creates index notes_by_day on notes",
 * "drops table old"; anything else "runs: <its first 80 characters>". It reads
 * the text only (nothing runs), so a summary is a hint: review shows the SQL
 * itself beside it.
 */
import { splitStatements, stripComments } from "../../jail-runtime/wire/sql-allowlist.js";

/**
 * The statements of a migration file: the allowlist's own splitter, so the broker, review and the
 * test kit split alike.
 */
export { splitStatements };

const IDENT = String.raw`("[^"]+"|\x60[^\x60]+\x60|\[[^\]]+\]|[\w$]+)`;
const unquote = (name: string): string => name.replace(/^["`[]|["`\]]$/g, "");

/** One statement's summary. */
export function summarizeStatement(statement: string): string {
  const s = statement.replace(/\s+/g, " ").trim();
  const exists = String.raw`(?:if (?:not )?exists )?`;
  let m = new RegExp(String.raw`^create (?:temp(?:orary)? )?table ${exists}${IDENT}`, "i").exec(s);
  if (m) return `creates table ${unquote(m[1]!)}`;
  m = new RegExp(String.raw`^alter table ${IDENT} add (?:column )?${IDENT}`, "i").exec(s);
  if (m) return `adds column ${unquote(m[1]!)}.${unquote(m[2]!)}`;
  m = new RegExp(String.raw`^alter table ${IDENT} rename to ${IDENT}`, "i").exec(s);
  if (m) return `renames table ${unquote(m[1]!)} to ${unquote(m[2]!)}`;
  m = new RegExp(String.raw`^alter table ${IDENT} drop (?:column )?${IDENT}`, "i").exec(s);
  if (m) return `drops column ${unquote(m[1]!)}.${unquote(m[2]!)}`;
  m = new RegExp(String.raw`^create (?:unique )?index ${exists}${IDENT} on ${IDENT}`, "i").exec(s);
  if (m) return `creates index ${unquote(m[1]!)} on ${unquote(m[2]!)}`;
  m = new RegExp(String.raw`^drop (table|index|view|trigger) ${exists}${IDENT}`, "i").exec(s);
  if (m) return `drops ${m[1]!.toLowerCase()} ${unquote(m[2]!)}`;
  return `runs: ${s.slice(0, 80)}`;
}

/** A migration's summary: its statements' summaries, joined. */
export function summarizeMigration(sql: string): string {
  const parts = splitStatements(sql).map((statement) => summarizeStatement(stripComments(statement)));
  return parts.length === 0 ? "does nothing" : parts.join("; ");
}
