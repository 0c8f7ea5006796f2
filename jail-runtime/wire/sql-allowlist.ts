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

export type SqlCheck = { readonly ok: true; readonly kind: string; readonly table: string } | { readonly ok: false; readonly rule: string; readonly msg: string };

const ALLOWED = new Set(["select", "with", "insert", "replace", "update", "delete", "create", "drop", "alter", "pragma"]);
/** Read-only PRAGMAs that tell an extension about its own schema. */
const PRAGMAS = new Set(["table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list", "user_version"]);

/** The text without comments, so a keyword cannot hide behind one. */
export function stripComments(sql: string): string {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/g, " ");
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
      return nameAfter(text, new RegExp(String.raw`\b(?:table|index|view|trigger)\s+(?:if\s+(?:not\s+)?exists\s+)?` + ident, "i"));
    default:
      return "";
  }
}

/** Whether `sql` may be prepared at all; the prepared statement is checked again by ext-db.ts. */
export function checkStatement(sql: string): SqlCheck {
  const text = stripComments(sql).trim();
  const kind = (/^[a-z]+/i.exec(text)?.[0] ?? "").toLowerCase();
  if (kind === "attach" || kind === "detach") return refuse("storage.attach", `${kind.toUpperCase()} is refused: an extension reaches only its own database`);
  if (kind === "vacuum") return refuse("storage.vacuum", "VACUUM is refused (VACUUM INTO writes another file)");
  // Read in the raw text too: a '--' inside a string literal would hide the rest of the line from the stripped one.
  if (/\bload_extension\s*\(/i.test(text) || /\bload_extension\b/i.test(sql)) return refuse("storage.load_extension", "load_extension() is refused: an extension loads no native code");
  if (!ALLOWED.has(kind)) return refuse("storage.statement", `'${kind.slice(0, 32) || text.slice(0, 32)}' statements are refused; use SELECT, INSERT, UPDATE, DELETE, REPLACE, WITH, CREATE, DROP, ALTER or a read-only PRAGMA`);
  if (kind === "pragma") {
    const m = /^pragma\s+(?:main\s*\.\s*)?([a-z_]+)\s*(\(\s*["'`[]?[\w$]+["'`\]]?\s*\))?\s*;?\s*$/i.exec(text);
    const name = m?.[1]?.toLowerCase() ?? "";
    if (m === null || !PRAGMAS.has(name)) return refuse("storage.pragma", `only these PRAGMAs may be read: ${[...PRAGMAS].join(", ")} (no '=' assignment)`);
    return { ok: true, kind, table: name };
  }
  return { ok: true, kind, table: tableOf(kind, text) };
}

/**
 * The statements of `sql` split at each `;` outside quotes and comments, each
 * trimmed, empty ones left out (a migration file's statements; more than one
 * in a `db.query`/`db.exec` is `storage.one_statement`).
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      const end = sql.indexOf(close, i + 1);
      i = end === -1 ? sql.length : end;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end === -1 ? sql.length : end;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end === -1 ? sql.length : end + 1;
    } else if (c === ";") {
      out.push(sql.slice(start, i));
      start = i + 1;
    }
  }
  out.push(sql.slice(start));
  return out.map((s) => s.trim()).filter((s) => stripComments(s).trim() !== "");
}
