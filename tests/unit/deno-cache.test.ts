/**
 * The per-artifact Deno cache: made once by a warm-up, shared by concurrent
 * callers, settled so the files read as they are, dropped when too large, and
 * handed to each jail as private copies (never the original, read-write).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { DENO_CACHE_MAX_BYTES, denoCacheFor, type DenoCacheMount } from "../../broker/jail/deno-cache.js";
import { DENO_CACHE_FILES, findBwrap, launchCommand } from "../../broker/jail/sandbox.js";

let root: string;
const deno = process.execPath; // any file: the cache key uses its path, size and mtime

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "tether-deno-cache-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A warm-up that writes what Deno writes: SQLite databases in WAL mode, left with their -wal files. */
function fakeWarm(calls: DenoCacheMount[], extraBytes = 0): (mount: DenoCacheMount) => Promise<void> {
  return async (mount) => {
    calls.push(mount);
    for (const name of DENO_CACHE_FILES) {
      const db = new Database(join(mount.dir, name));
      db.pragma("journal_mode = WAL");
      db.pragma("wal_autocheckpoint = 0");
      db.exec("create table t (k text primary key, v blob)");
      db.prepare("insert into t values (?, ?)").run(name, Buffer.alloc(extraBytes));
      // Left open-and-unclosed in spirit: the WAL still holds the rows.
      db.close();
    }
    await new Promise((r) => setTimeout(r, 20));
  };
}

test("the first caller warms once into a writable scratch folder; concurrent callers share that warm-up", async () => {
  const calls: DenoCacheMount[] = [];
  const source = denoCacheFor(root, "a".repeat(64), deno, fakeWarm(calls));
  const [one, two] = await Promise.all([source(), source()]);
  expect(calls).toHaveLength(1);
  expect(calls[0]!.writable).toBe(true);
  expect(one).toEqual(two);
  expect(one?.writable).toBe(false);
  expect(one?.dir.startsWith(join(root, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-"))).toBe(true);
  // Later callers use what is there: no second warm-up.
  expect(await source()).toEqual(one);
  expect(calls).toHaveLength(1);
  // No scratch folder is left behind.
  expect(readdirSync(root)).toEqual([one!.dir.slice(root.length + 1)]);
});

test("the databases are settled: WAL folded into the file, rollback journal, every row readable from the file alone", async () => {
  const cache = await denoCacheFor(root, "b".repeat(64), deno, fakeWarm([]))();
  const files = readdirSync(cache!.dir).sort();
  expect(files).toEqual([...DENO_CACHE_FILES].sort());
  for (const name of DENO_CACHE_FILES) {
    const db = new Database(join(cache!.dir, name), { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("delete");
    expect(db.prepare("select k from t").pluck().all()).toEqual([name]);
    db.close();
  }
});

test("a failed warm-up leaves no cache (boots go on without one) and is tried again next time", async () => {
  let tries = 0;
  const source = denoCacheFor(root, "c".repeat(64), deno, async () => {
    tries++;
    throw new Error("boot failed");
  });
  expect(await source()).toBeNull();
  expect(readdirSync(root)).toEqual([]);
  expect(await source()).toBeNull();
  expect(tries).toBe(2);
});

test("a cache too large to copy into every jail is dropped, and not warmed again", async () => {
  const calls: DenoCacheMount[] = [];
  const source = denoCacheFor(root, "d".repeat(64), deno, fakeWarm(calls, Math.ceil(DENO_CACHE_MAX_BYTES / 2)));
  const cache = await source();
  expect(cache).not.toBeNull();
  expect(readdirSync(cache!.dir)).toEqual([]);
  await source();
  expect(calls).toHaveLength(1);
});

test("artifacts never share a cache folder", async () => {
  const a = await denoCacheFor(root, "e".repeat(64), deno, fakeWarm([]))();
  const b = await denoCacheFor(root, "f".repeat(64), deno, fakeWarm([]))();
  expect(a?.dir).not.toBe(b?.dir);
});

const bwrapTest = findBwrap() === null ? test.skip : test;

bwrapTest(
  "the jail gets private copies of the cache files (bwrap --file on fds 5…), never the folder; only the warm-up binds the cache files themselves read-write",
  async () => {
    const cache = await denoCacheFor(root, "9".repeat(64), deno, fakeWarm([]))();
    const base = { sandbox: "bwrap" as const, deno, artifact: join(root, "a.js"), socketDir: root, memoryMb: 64 };
    const copied = launchCommand({ ...base, denoCache: cache });
    // fd 4 is the artifact (copied in too); the cache files follow it.
    expect(copied.files).toEqual([base.artifact, ...DENO_CACHE_FILES.map((name) => join(cache!.dir, name))]);
    const joined = copied.bwrapOptions!.join(" ");
    DENO_CACHE_FILES.forEach((name, i) => expect(joined).toContain(`--file ${5 + i} /tmp/deno/${name}`));
    expect(joined).not.toContain(cache!.dir);
    const warming = launchCommand({ ...base, denoCache: { dir: cache!.dir, writable: true } });
    expect(warming.files).toEqual([base.artifact]);
    const warmArgs = warming.bwrapOptions!.join(" ");
    for (const name of DENO_CACHE_FILES) {
      for (const file of [name, `${name}-wal`, `${name}-shm`])
        expect(warmArgs).toContain(`--bind ${cache!.dir}/${file} /tmp/deno/${file}`);
    }
    // Never the folder itself: the rest of DENO_DIR (localStorage, the Cache API) stays on the jail's tmpfs.
    expect(warmArgs).not.toContain(`--bind ${cache!.dir} `);
    expect(launchCommand(base).files).toEqual([base.artifact]);
    expect(existsSync(cache!.dir)).toBe(true);
  },
);
