/**
 * An extension's migrations: `migrations/NNNN_name.sql` in its folder, read at
 * install beside the bundle. They travel with the artifact: their names and
 * hashes are appended to the artifact's code as its last line (the
 * migrations trailer), so the artifact hash an approval pins covers them, and
 * their texts are kept with the artifact's other sources (by hash). Each is
 * checked here statement by statement against the same allowlist `db.exec`
 * obeys, so a migration that could never run is refused at install, not at
 * approval.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { BrokerCode, TetherError } from "../base/errors.js";
import { splitStatements } from "../registry/migration-summary.js";
import { checkStatement, stripComments } from "../store/sql-allowlist.js";
import type { SourceFile } from "./source-file.js";
import type { Manifest } from "./manifest.js";

export const MIGRATIONS_DIR = "migrations";
/** A migration's file name: four digits from 0001, an underscore, lowercase words. */
export const MIGRATION_NAME = /^(\d{4})_([a-z0-9][a-z0-9_]{0,63})\.sql$/;
/** The most migrations one version ships. */
export const MAX_MIGRATIONS = 256;
/** The most one migration file holds. */
export const MAX_MIGRATION_BYTES = 256 * 1024;
/** The most statements one migration holds. */
export const MAX_MIGRATION_STATEMENTS = 1000;

/** A migration as the artifact pins it: its file name and the sha256 of its text. */
export interface PinnedMigration {
  readonly name: string;
  readonly sha256: string;
}

const fail = (msg: string): never => {
  throw new TetherError(BrokerCode.installFailed, msg);
};

/**
 * The folder's migrations in order, as source files (`migrations/0001_x.sql`),
 * each checked; [] when there is no `migrations/` folder.
 */
export function readMigrations(root: string, manifest: Manifest): SourceFile[] {
  const dir = join(root, MIGRATIONS_DIR);
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return [];
  }
  if (!st.isDirectory())
    fail(`'${MIGRATIONS_DIR}' is not a folder (it must be a real folder of NNNN_name.sql files, not a link)`);
  const names = readdirSync(dir).sort();
  if (names.length === 0) return [];
  if (manifest.storage === undefined)
    fail(
      `'${MIGRATIONS_DIR}/' holds migrations but the manifest declares no database: ` +
        `add a [storage] table to manifest.toml (docs/storage.md), or remove the folder`,
    );
  if (names.length > MAX_MIGRATIONS)
    fail(
      `'${MIGRATIONS_DIR}/' holds ${names.length} files; at most ${MAX_MIGRATIONS} migrations ship with one version`,
    );
  const files: SourceFile[] = [];
  names.forEach((name, i) => {
    const shown = `${MIGRATIONS_DIR}/${name}`;
    const m = MIGRATION_NAME.exec(name);
    if (m === null)
      fail(
        `'${shown}' is not a migration: name each file NNNN_name.sql (four digits from 0001, ` +
          `then lowercase letters, digits and _), and keep nothing else in ${MIGRATIONS_DIR}/`,
      );
    const want = String(i + 1).padStart(4, "0");
    if (m![1] !== want)
      fail(`'${shown}': migrations are numbered from 0001 with no gap or repeat; expected ${want}_….sql here`);
    const path = join(dir, name);
    const file = lstatSync(path);
    if (!file.isFile())
      fail(`'${shown}' is not a regular file (a link, folder or device); put the SQL itself in the extension folder`);
    if (file.nlink > 1)
      fail(`'${shown}' is a hard link (${file.nlink} names); copy the file into the extension folder instead`);
    const real = realpathSync(path);
    const rel = relative(realpathSync(root), real);
    if (rel.startsWith("..") || isAbsolute(rel)) fail(`'${shown}' is outside the extension folder (it is ${real})`);
    if (file.size > MAX_MIGRATION_BYTES)
      fail(
        `'${shown}' is ${file.size} bytes; a migration holds at most ${MAX_MIGRATION_BYTES} (split it into several)`,
      );
    const content = readFileSync(real);
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(content);
    } catch {
      return fail(`'${shown}' is not UTF-8 text`);
    }
    const statements = splitStatements(text);
    if (statements.length === 0) fail(`'${shown}' holds no statement`);
    if (statements.length > MAX_MIGRATION_STATEMENTS)
      fail(`'${shown}' holds ${statements.length} statements; at most ${MAX_MIGRATION_STATEMENTS}`);
    statements.forEach((statement, j) => {
      const check = checkStatement(statement);
      if (!check.ok)
        fail(
          `'${shown}' statement ${j + 1} ` +
            `(${stripComments(statement).replace(/\s+/g, " ").trim().slice(0, 60)}): ${check.msg} ` +
            `(rule: ${check.rule}); a migration ` +
            `obeys the rules db.exec does, and the broker wraps it in a transaction itself`,
        );
    });
    files.push({ path: shown, sha256: createHash("sha256").update(content).digest("hex"), content });
  });
  return files;
}

const TRAILER = "// tether-migrations: ";

/** The artifact's last line naming its migrations (appended to every artifact of an extension with [storage]). */
export function migrationsTrailer(migrations: readonly SourceFile[]): string {
  const pinned: PinnedMigration[] = migrations.map((m) => ({
    name: m.path.slice(MIGRATIONS_DIR.length + 1),
    sha256: m.sha256,
  }));
  return `\n${TRAILER}${JSON.stringify(pinned)}\n`;
}

/**
 * The migrations an artifact pins, read from its last line. Only an artifact of
 * an extension with [storage] has one: that line is always the broker's, as it
 * is appended after the bundle (whatever the code ends with). null: none.
 */
export function pinnedMigrations(code: string): PinnedMigration[] | null {
  const end = code.endsWith("\n") ? code.length - 1 : code.length;
  const start = code.lastIndexOf("\n", end - 1) + 1;
  const line = code.slice(start, end);
  if (!line.startsWith(TRAILER)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line.slice(TRAILER.length));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) return null;
  const out: PinnedMigration[] = [];
  for (const item of parsed) {
    const { name, sha256 } = (item ?? {}) as { name?: unknown; sha256?: unknown };
    if (
      typeof name !== "string" ||
      !MIGRATION_NAME.test(name) ||
      typeof sha256 !== "string" ||
      !/^[0-9a-f]{64}$/.test(sha256)
    )
      return null;
    out.push({ name, sha256 });
  }
  return out;
}
