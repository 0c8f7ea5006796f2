/**
 * What `migrations/` an install accepts (broker/install/migrations.ts): every
 * way a folder of migrations can be wrong is refused with the file and what to
 * change, and the trailer pins exactly what was read.
 */
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrationsTrailer, pinnedMigrations, readMigrations } from "../../broker/install/migrations.js";
import type { Manifest } from "../../broker/install/manifest.js";

const withStorage = { storage: { max_bytes: 65536 } } as unknown as Manifest;
const without = {} as unknown as Manifest;
let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "tether-mig-"));
  mkdirSync(join(root, "migrations"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const put = (name: string, text: string) => writeFileSync(join(root, "migrations", name), text);
const refusal = (manifest: Manifest = withStorage): string => {
  try {
    readMigrations(root, manifest);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("accepted");
};

test("reads them in order with their hashes, and the trailer pins exactly those", () => {
  put("0002_b.sql", "ALTER TABLE a ADD COLUMN b;");
  put("0001_a.sql", "CREATE TABLE a (x);");
  const files = readMigrations(root, withStorage);
  expect(files.map((f) => f.path)).toEqual(["migrations/0001_a.sql", "migrations/0002_b.sql"]);
  const code = `export const x = 1;${migrationsTrailer(files)}`;
  expect(pinnedMigrations(code)).toEqual(
    files.map((f) => ({ name: f.path.slice("migrations/".length), sha256: f.sha256 })),
  );
});

test("no folder, or an empty one, is no migrations", () => {
  expect(readMigrations(root, without)).toEqual([]);
  rmSync(join(root, "migrations"), { recursive: true });
  expect(readMigrations(root, without)).toEqual([]);
});

test.each([
  [
    "a misnamed file",
    () => put("1_a.sql", "CREATE TABLE a (x);"),
    "'migrations/1_a.sql' is not a migration: name each file NNNN_name.sql",
  ],
  [
    "an uppercase name",
    () => put("0001_Notes.sql", "CREATE TABLE a (x);"),
    "'migrations/0001_Notes.sql' is not a migration",
  ],
  [
    "a README beside them",
    () => (put("0001_a.sql", "CREATE TABLE a (x);"), put("README.md", "hi")),
    "'migrations/README.md' is not a migration",
  ],
  [
    "a gap",
    () => (put("0001_a.sql", "CREATE TABLE a (x);"), put("0003_c.sql", "CREATE TABLE c (x);")),
    "'migrations/0003_c.sql': migrations are numbered from 0001 with no gap or repeat; expected 0002_….sql here",
  ],
  [
    "a repeated number",
    () => (put("0001_a.sql", "CREATE TABLE a (x);"), put("0001_b.sql", "CREATE TABLE b (x);")),
    "'migrations/0001_b.sql': migrations are numbered from 0001 with no gap or repeat; expected 0002_….sql here",
  ],
  ["not starting at 0001", () => put("0002_a.sql", "CREATE TABLE a (x);"), "expected 0001_….sql here"],
  ["an empty migration", () => put("0001_a.sql", "-- nothing\n"), "'migrations/0001_a.sql' holds no statement"],
  [
    "ATTACH",
    () => put("0001_a.sql", "CREATE TABLE a (x);\nATTACH DATABASE '/etc/x' AS y;"),
    "'migrations/0001_a.sql' statement 2 (ATTACH DATABASE '/etc/x' AS y): ",
  ],
  ["a pragma write", () => put("0001_a.sql", "PRAGMA writable_schema = ON;"), "(rule: storage.pragma)"],
  ["load_extension", () => put("0001_a.sql", "SELECT load_extension('x');"), "(rule: storage.load_extension)"],
  ["VACUUM INTO", () => put("0001_a.sql", "VACUUM INTO '/tmp/copy';"), "(rule: storage.vacuum)"],
  [
    "its own transaction",
    () => put("0001_a.sql", "BEGIN;\nCREATE TABLE a (x);\nCOMMIT;"),
    "the broker wraps it in a transaction itself",
  ],
  [
    "not UTF-8",
    () => writeFileSync(join(root, "migrations", "0001_a.sql"), Buffer.from([0x43, 0xff, 0xfe])),
    "'migrations/0001_a.sql' is not UTF-8 text",
  ],
  [
    "too large",
    () => put("0001_a.sql", `CREATE TABLE a (x);${" ".repeat(300 * 1024)}`),
    "a migration holds at most 262144",
  ],
  [
    "a symlink",
    () => (
      writeFileSync(join(root, "real.sql"), "CREATE TABLE a (x);"),
      symlinkSync(join(root, "real.sql"), join(root, "migrations", "0001_a.sql"))
    ),
    "is not a regular file",
  ],
  [
    "a hard link",
    () => (
      writeFileSync(join(root, "real.sql"), "CREATE TABLE a (x);"),
      linkSync(join(root, "real.sql"), join(root, "migrations", "0001_a.sql"))
    ),
    "is a hard link (2 names)",
  ],
  ["a folder", () => mkdirSync(join(root, "migrations", "0001_a.sql")), "is not a regular file"],
])("%s is refused", (_what, make, message) => {
  make();
  expect(refusal()).toContain(message);
});

test("migrations without [storage] are refused, naming what to add", () => {
  put("0001_a.sql", "CREATE TABLE a (x);");
  expect(refusal(without)).toContain(
    "'migrations/' holds migrations but the manifest declares no database: add a [storage] table to manifest.toml",
  );
});

test("a migrations folder that is a link is refused", () => {
  rmSync(join(root, "migrations"), { recursive: true });
  mkdirSync(join(root, "elsewhere"));
  symlinkSync(join(root, "elsewhere"), join(root, "migrations"));
  expect(refusal()).toContain("'migrations' is not a folder");
});

test("only a well-formed last line is read as the trailer", () => {
  expect(pinnedMigrations("export const x = 1;\n")).toBeNull();
  expect(pinnedMigrations('// tether-migrations: [{"name":"0001_a.sql","sha256":"00"}]\n')).toBeNull();
  expect(pinnedMigrations(`// tether-migrations: [{"name":"../x.sql","sha256":"${"0".repeat(64)}"}]\n`)).toBeNull();
  expect(pinnedMigrations("// tether-migrations: []\nexport const y = 2;\n")).toBeNull();
  expect(pinnedMigrations("x\n// tether-migrations: []\n")).toEqual([]);
});
