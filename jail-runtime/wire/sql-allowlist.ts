/**
 * The statements an extension's database accepts, checked by the broker
 * before anything runs: one statement, a known leading keyword, no ATTACH or
 * DETACH (they reach other files), no load_extension, no VACUUM (INTO writes a
 * file), PRAGMA only to read a few harmless ones. better-sqlite3 exposes no
 * authorizer, so this reads the text; the connection is also defensive with
 * an untrusted schema (broker/store/ext-db.ts), and prepare() refuses a second
 * statement. In the wire so that the broker and the SDK's test kit
 * (`FakeDb`, jail-runtime/ext/testing/db.ts) share it.
 */

export type SqlCheck =
  | { readonly ok: true; readonly kind: string; readonly table: string }
  | { readonly ok: false; readonly rule: string; readonly msg: string };

const ALLOWED = new Set([
  "select",
  "with",
  "insert",
  "replace",
  "update",
  "delete",
  "create",
  "drop",
  "alter",
  "pragma",
]);
/** Read-only PRAGMAs that tell an extension about its own schema. */
const PRAGMAS = new Set([
  "table_info",
  "table_xinfo",
  "index_list",
  "index_info",
  "index_xinfo",
  "foreign_key_list",
  "user_version",
]);
/** The ones that take an argument: a table's or an index's name (user_version with one is a write). */
const TABLE_PRAGMAS = new Set([
  "table_info",
  "table_xinfo",
  "index_list",
  "index_info",
  "index_xinfo",
  "foreign_key_list",
]);

/**
 * The text in pieces as SQLite's tokenizer reads it: quoted strings and
 * identifiers ('…', "…", `…`, […]) are kept whole, so a `--`, `/*` or `;`
 * inside one is text, not a comment or the end of a statement. Each statement
 * (split at a `;` outside them) comes back as written (`text`, what runs) and
 * with its comments blanked (`code`, what is judged).
 */
export function scanSql(sql: string): Array<{ text: string; code: string }> {
  const out: Array<{ text: string; code: string }> = [];
  let text = "";
  let code = "";
  let i = 0;
  const end = (from: number, close: string): number => {
    const j = sql.indexOf(close, from);
    return j < 0 ? sql.length : j + close.length;
  };
  while (i < sql.length) {
    const ch = sql[i]!;
    const two = sql.slice(i, i + 2);
    let next: number;
    if (ch === "'" || ch === '"' || ch === "`") next = end(i + 1, ch);
    else if (ch === "[") next = end(i + 1, "]");
    else if (two === "--" || two === "/*") {
      next = two === "--" ? (sql.indexOf("\n", i) < 0 ? sql.length : sql.indexOf("\n", i)) : end(i + 2, "*/");
      text += sql.slice(i, next);
      code += " ";
      i = next;
      continue;
    } else if (ch === ";") {
      out.push({ text, code });
      text = "";
      code = "";
      i += 1;
      continue;
    } else next = i + 1;
    text += sql.slice(i, next);
    code += sql.slice(i, next);
    i = next;
  }
  out.push({ text, code });
  return out;
}

/**
 * The statements of a migration file (or any text), split at `;` outside
 * quotes and comments as SQLite reads them, each as written (comments kept):
 * what the allowlist judges and what runs is the text review shows.
 */
export function splitStatements(sql: string): string[] {
  return scanSql(sql)
    .filter((s) => s.code.trim() !== "")
    .map((s) => s.text.trim());
}

/** A table pragma's argument: a quoted name ("…", '…', `…`, […]) or a bare one. */
const PRAGMA_ARG = String.raw`(?:"[^"]+"|'[^']+'|\x60[^\x60]+\x60|\[[^\]]+\]|[A-Za-z_][\w$]*)`;
/** A PRAGMA statement: its name, then its argument in parentheses when it has one. */
const READ_PRAGMA = new RegExp(
  String.raw`^pragma\s+(?:main\s*\.\s*)?([a-z_]+)\s*(\(\s*${PRAGMA_ARG}\s*\))?\s*;?\s*$`,
  "i",
);

/** The text without comments (quotes read as SQLite reads them), so a keyword cannot hide behind one. */
export function stripComments(sql: string): string {
  return scanSql(sql)
    .map((s) => s.code)
    .join(";");
}

const refuse = (rule: string, msg: string): SqlCheck => ({ ok: false, rule, msg });

/** The first name after `re`, unquoted and bounded (for the audit's target: never a value). */
function nameAfter(text: string, re: RegExp): string {
  const m = re.exec(text);
  if (m === null) return "";
  return (m[1] ?? "").replace(/["`[\]]/g, "").slice(0, 64);
}

/** The statement's table, as the audit row names it. */
function tableOf(kind: string, text: string): string {
  const ident = String.raw`((?:"[^"]+"|\x60[^\x60]+\x60|\[[^\]]+\]|[\w$]+)(?:\.(?:"[^"]+"|[\w$]+))?)`;
  switch (kind) {
    case "select":
    case "with":
    case "delete":
      return nameAfter(text, new RegExp(String.raw`\bfrom\s+` + ident, "i"));
    case "insert":
    case "replace":
      return nameAfter(text, new RegExp(String.raw`\binto\s+` + ident, "i"));
    case "update":
      return nameAfter(text, new RegExp(String.raw`^\s*update\s+(?:or\s+\w+\s+)?` + ident, "i"));
    case "create":
    case "drop":
    case "alter":
      return nameAfter(
        text,
        new RegExp(String.raw`\b(?:table|index|view|trigger)\s+(?:if\s+(?:not\s+)?exists\s+)?` + ident, "i"),
      );
    default:
      return "";
  }
}

/** String literals emptied ('…' → ''), so a table name or keyword written inside one is not read as one. */
const blankStrings = (code: string): string =>
  code.replace(/"[^"]*"?|\x60[^\x60]*\x60?|\[[^\]]*\]?|'[^']*'?/g, (t) => (t.startsWith("'") ? "''" : t));

/**
 * The statement a `WITH …` clause leads to, and the text from its keyword on:
 * the first SELECT, INSERT, UPDATE, DELETE, REPLACE or VALUES right after a
 * `)` closing a common table expression at the top level. The audit row and
 * the hooks see `delete notes` for `WITH x AS (…) DELETE FROM notes`, not `with`.
 */
function afterWith(text: string): { kind: string; rest: string } | null {
  let depth = 0;
  let closed = false;
  for (const m of text.matchAll(/"[^"]*"?|\x60[^\x60]*\x60?|\[[^\]]*\]?|''|[()]|[A-Za-z_][\w$]*/g)) {
    const token = m[0];
    if (token === "(") depth += 1;
    else if (token === ")") depth -= 1;
    if (depth === 0 && closed && /^(select|insert|update|delete|replace|values)$/i.test(token)) {
      const kind = token.toLowerCase();
      return { kind: kind === "values" ? "select" : kind, rest: text.slice(m.index) };
    }
    closed = depth === 0 && token === ")";
  }
  return null;
}

/** Whether `sql` may be prepared at all; the prepared statement is checked again by ext-db.ts. */
export function checkStatement(sql: string): SqlCheck {
  const text = stripComments(sql).trim();
  const kind = (/^[a-z]+/i.exec(text)?.[0] ?? "").toLowerCase();
  if (kind === "attach" || kind === "detach")
    return refuse("storage.attach", `${kind.toUpperCase()} is refused: an extension reaches only its own database`);
  if (kind === "vacuum") return refuse("storage.vacuum", "VACUUM is refused (VACUUM INTO writes another file)");
  // Read in the raw text too: a '--' inside a string literal would hide the rest of the line from the stripped one.
  if (/\bload_extension\s*\(/i.test(text) || /\bload_extension\b/i.test(sql))
    return refuse("storage.load_extension", "load_extension() is refused: an extension loads no native code");
  if (!ALLOWED.has(kind))
    return refuse(
      "storage.statement",
      `'${kind.slice(0, 32) || text.slice(0, 32)}' statements are refused; use SELECT, INSERT, UPDATE, DELETE, ` +
        `REPLACE, WITH, CREATE, DROP, ALTER or a read-only PRAGMA`,
    );
  // A pragma's table-valued function is the pragma itself (pragma_optimize runs ANALYZE, pragma_database_list names
  // the broker's files): only the readable ones, wherever the name appears (raw text too, as for load_extension).
  for (const m of `${text} ${sql}`.matchAll(/\bpragma_(\w*)/gi)) {
    if (!PRAGMAS.has(m[1]!.toLowerCase()))
      return refuse(
        "storage.pragma",
        `pragma_${m[1]!.slice(0, 32)} is refused: only these pragma functions may be ` +
          `read: ${[...PRAGMAS].map((p) => `pragma_${p}`).join(", ")}`,
      );
  }
  if (kind === "pragma") {
    // Only a read: a table pragma with its table's name, or user_version bare. `PRAGMA x(v)` is a
    // write as much as `PRAGMA x = v`.
    const m = READ_PRAGMA.exec(text);
    const name = m?.[1]?.toLowerCase() ?? "";
    const readable = m !== null && (m[2] === undefined ? PRAGMAS.has(name) : TABLE_PRAGMAS.has(name));
    if (!readable)
      return refuse(
        "storage.pragma",
        `only these PRAGMAs may be read: ${[...PRAGMAS].join(", ")} (no '=' assignment, no '(value)' call)`,
      );
    return { ok: true, kind, table: name };
  }
  const bare = blankStrings(text);
  if (kind === "with") {
    const main = afterWith(bare);
    if (main !== null) return { ok: true, kind: main.kind, table: tableOf(main.kind, main.rest) };
  }
  return { ok: true, kind, table: tableOf(kind, bare) };
}
