/**
 * The bundle cache (broker/install/bundle-cache.ts): a second bundle of what
 * the jail would see the same is the kept one; anything the jail could see
 * differently is a miss; a kept file the user does not own alone, or of the
 * wrong shape, is never used; failures and unjailed bundles are never kept.
 * "Served from the cache" is shown by a kept artifact edited in place: only
 * the cache could answer with it.
 */
import {
  chmodSync,
  chownSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { EnvironmentError, readEnvironment } from "../../broker/cli/environment.js";
import { keepBundle, keptBundle, MAX_ENTRIES, openBundleCache, treeStamp } from "../../broker/install/bundle-cache.js";
import { bundleExtension, runtimeRoot } from "../../broker/install/bundle.js";
import { snapshotFolder } from "../../broker/install/folder-snapshot.js";
import { readManifest } from "../../broker/install/manifest.js";
import { envJail, envSandbox } from "../support/env-options.js";

const setup = () => ({ jail: envJail(), sandbox: envSandbox(), bundleCache: cache });
const jailed = envSandbox() === "bwrap";

let base: string;
let cache: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "tether-bundle-cache-")));
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

beforeEach(() => {
  cache = mkdtempSync(join(base, "cache-"));
});

let folders = 0;
/** A fresh extension folder whose tool answers `text`. */
function extension(text: string): string {
  const dir = join(base, `ext-${folders++}`);
  mkdirSync(dir);
  writeFileSync(
    join(dir, "manifest.toml"),
    `name = "cached"\nversion = "0.1.0"\ndescription = "d"\nentry = "index.ts"\n`,
  );
  // A statement with an effect: the bundle keeps it (an unused export would be shaken out).
  writeFileSync(join(dir, "index.ts"), `(globalThis as Record<string, unknown>).text = ${JSON.stringify(text)};\n`);
  return dir;
}

const bundle = (dir: string) => bundleExtension(dir, readManifest(dir), setup());
const keptFiles = () => readdirSync(cache).filter((name) => /^[0-9a-f]{64}\.json$/.test(name));

/** Replaces the artifact in every kept answer with `code`, keeping the file's owner and modes. */
function editKept(code: string): void {
  for (const name of keptFiles()) {
    const file = join(cache, name);
    const kept = JSON.parse(readFileSync(file, "utf8")) as { answer: { code: string } };
    kept.answer.code = code;
    writeFileSync(file, JSON.stringify(kept));
  }
}

(jailed ? describe : describe.skip)("bundles kept and found", () => {
  test("the same folder again is answered from the cache, with its sources read from the folder", async () => {
    const dir = extension("first");
    const made = await bundle(dir);
    expect(made.code).toContain('"first"');
    expect(keptFiles()).toHaveLength(1);
    editKept("// from the cache\n");
    const again = await bundle(dir);
    expect(again.code).toBe("// from the cache\n");
    expect(again.sources.map((s) => s.path)).toEqual(made.sources.map((s) => s.path));
    expect(keptFiles()).toHaveLength(1);
  });

  test("a changed byte, same size and mtime, is a miss", async () => {
    const dir = extension("aaaa");
    await bundle(dir);
    editKept("// stale\n");
    const file = join(dir, "index.ts");
    const st = statSync(file);
    writeFileSync(file, readFileSync(file, "utf8").replace("aaaa", "bbbb"));
    expect(statSync(file).size).toBe(st.size);
    utimesSync(file, st.atime, st.mtime);
    const again = await bundle(dir);
    expect(again.code).toContain('"bbbb"');
    expect(keptFiles()).toHaveLength(2);
  });

  test("the same bytes at another path are a miss (an artifact names paths relative to its folder)", async () => {
    const one = extension("same");
    const two = extension("same");
    await bundle(one);
    editKept("// one's\n");
    expect((await bundle(two)).code).toContain('"same"');
  });

  test("other jail settings are a miss", async () => {
    const dir = extension("limits");
    await bundle(dir);
    editKept("// kept\n");
    const cgroup = envJail().cgroup === "none" ? "auto" : "none";
    const other = await bundleExtension(dir, readManifest(dir), { ...setup(), jail: { ...envJail(), cgroup } });
    expect(other.code).toContain('"limits"');
  });

  test("a failed bundle is not kept, and the next try runs the job again", async () => {
    const dir = extension("broken");
    writeFileSync(join(dir, "index.ts"), "export const = ;\n");
    await expect(bundle(dir)).rejects.toThrow();
    expect(keptFiles()).toHaveLength(0);
    writeFileSync(join(dir, "index.ts"), "(globalThis as Record<string, unknown>).fixed = 1;\n");
    expect((await bundle(dir)).code).toContain("fixed");
  });

  // Every way the kept file or its folder can be untrustworthy or malformed: each is a miss.
  const spoiled: Array<[string, (file: string) => void, boolean?]> = [
    ["the folder writable by its group", () => chmodSync(cache, 0o770)],
    ["the folder writable by anyone", () => chmodSync(cache, 0o777)],
    ["the file writable by its group", (file) => chmodSync(file, 0o664)],
    ["the file writable by anyone", (file) => chmodSync(file, 0o666)],
    ["the file another user's", (file) => chownSync(file, 12_345, 12_345), true],
    ["the folder another user's", () => chownSync(cache, 12_345, 12_345), true],
    ["not JSON", (file) => writeFileSync(file, "{ not json")],
    ["a failure's shape", (file) => writeFileSync(file, JSON.stringify({ key: keyOf(file), answer: { ok: false } }))],
    ["the code not a string", (file) => rewrite(file, (k) => ({ ...k, answer: { ...k.answer, code: 7 } }))],
    ["a source not a string", (file) => rewrite(file, (k) => ({ ...k, answer: { ...k.answer, sources: [1] } }))],
    ["another key inside", (file) => rewrite(file, (k) => ({ ...k, key: "0".repeat(64) }))],
    [
      "a folder in the file's place",
      (file) => {
        rmSync(file);
        mkdirSync(file);
      },
    ],
    [
      "a FIFO in the file's place (a read would block)",
      (file) => {
        rmSync(file);
        execFileSync("mkfifo", [file]);
      },
    ],
    [
      "a link to a copy of the file, the user's own",
      (file) => {
        const elsewhere = join(base, `elsewhere-${folders++}.json`);
        writeFileSync(elsewhere, readFileSync(file));
        rmSync(file);
        symlinkSync(elsewhere, file);
      },
    ],
  ];
  const root = process.geteuid?.() === 0;
  // One argument per row's element: a longer parameter list would make jest pass `done`.
  test.each(spoiled.filter(([, , needsRoot]) => needsRoot !== true || root))(
    "%s: a miss, and the job runs",
    async (...[, spoil]) => {
      const dir = extension("trusted");
      await bundle(dir);
      editKept("// untrusted\n");
      const file = join(cache, keptFiles()[0]!);
      spoil(file);
      const again = await bundle(dir);
      expect(again.code).toContain('"trusted"');
    },
  );
});

const keyOf = (file: string) => (JSON.parse(readFileSync(file, "utf8")) as { key: string }).key;
function rewrite(file: string, change: (kept: { key: string; answer: Record<string, unknown> }) => unknown): void {
  writeFileSync(file, JSON.stringify(change(JSON.parse(readFileSync(file, "utf8")))));
}

test("no OS sandbox: nothing is kept (the job reads the folder itself, not the copy the key describes)", async () => {
  const dir = extension("unjailed");
  await bundleExtension(dir, readManifest(dir), { jail: envJail(), sandbox: "none", bundleCache: cache });
  expect(keptFiles()).toHaveLength(0);
});

(jailed ? test : test.skip)("no OS sandbox: a kept bundle is not found either", async () => {
  const dir = extension("kept, then unjailed");
  await bundle(dir);
  editKept("// kept\n");
  const unjailed = await bundleExtension(dir, readManifest(dir), {
    jail: envJail(),
    sandbox: "none",
    bundleCache: cache,
  });
  expect(unjailed.code).toContain("kept, then unjailed");
});

// Setting a file's times takes its owner or root: the unprivileged run uses the checkout in place when it can read it
// (as CI does), and there the SDK is another user's.
const sdkFile = join(runtimeRoot(), "wire", "version.ts");
const ownsSdk = process.geteuid?.() === 0 || statSync(sdkFile).uid === process.geteuid?.();

(jailed && ownsSdk ? test : test.skip)(
  "an SDK file touched (its ctime moves, its bytes do not) is a miss",
  async () => {
    const dir = extension("sdk");
    await bundle(dir);
    editKept("// before the SDK changed\n");
    const st = statSync(sdkFile);
    // ctime has a clock's resolution: set the same times again until it moves.
    for (let tries = 0; statSync(sdkFile).ctimeMs === st.ctimeMs && tries < 10_000; tries++)
      utimesSync(sdkFile, st.atime, st.mtime);
    expect(statSync(sdkFile).ctimeMs).not.toBe(st.ctimeMs);
    expect((await bundle(dir)).code).toContain('"sdk"');
  },
);

describe("the default folder, under a home of the test's own", () => {
  test("told nothing, bundles are kept in ~/.cache/tether/bundles, closed to others", () => {
    const home = mkdtempSync(join(base, "home-"));
    const dir = openBundleCache(undefined, home);
    expect(dir).toBe(join(home, ".cache", "tether", "bundles"));
    expect(statSync(dir!).mode & 0o777).toBe(0o700);
  });

  test("told false, none: not the default folder either", () => {
    const home = mkdtempSync(join(base, "home-"));
    expect(openBundleCache(false, home)).toBeNull();
    expect(readdirSync(home)).toEqual([]);
  });

  (process.geteuid?.() === 0 ? test : test.skip)(
    "a home that is another user's: none (a root broker run with someone's HOME)",
    () => {
      const home = mkdtempSync(join(base, "home-"));
      chownSync(home, 12_345, 12_345);
      expect(openBundleCache(undefined, home)).toBeNull();
      expect(readdirSync(home)).toEqual([]);
    },
  );
});

describe("a folder nobody else can change, or none", () => {
  test("the folder a link, even to a folder of the user's own: none, and the target untouched", () => {
    const target = mkdtempSync(join(base, "target-"));
    chmodSync(target, 0o755);
    const link = join(base, `link-${folders++}`);
    symlinkSync(target, link);
    expect(openBundleCache(link)).toBeNull();
    expect(statSync(target).mode & 0o777).toBe(0o755);
  });

  test("a folder on the way writable by others (not sticky): none, and nothing made in it", () => {
    const open = mkdtempSync(join(base, "open-"));
    chmodSync(open, 0o777);
    expect(openBundleCache(join(open, "bundles"))).toBeNull();
    expect(readdirSync(open)).toEqual([]);
  });

  test("a sticky root-owned folder on the way (/tmp) is fine; the cache folder itself open to others is not", () => {
    expect(statSync(tmpdir()).mode & 0o1000).not.toBe(0);
    expect(openBundleCache(cache)).toBe(cache);
    chmodSync(cache, 0o777);
    expect(openBundleCache(cache)).toBeNull();
    chmodSync(cache, 0o1700);
    expect(openBundleCache(cache)).toBeNull();
  });

  test("a folder of the user's that others may read is not the cache, nor changed to be", () => {
    const shared = mkdtempSync(join(base, "shared-"));
    chmodSync(shared, 0o755);
    expect(openBundleCache(shared)).toBeNull();
    expect(statSync(shared).mode & 0o777).toBe(0o755);
    expect(readdirSync(shared)).toEqual([]);
  });

  test("a closed folder holding other files is not the cache; an empty one is tagged and used", () => {
    const busy = mkdtempSync(join(base, "busy-"));
    writeFileSync(join(busy, "notes.txt"), "mine");
    expect(openBundleCache(busy)).toBeNull();
    expect(readdirSync(busy)).toEqual(["notes.txt"]);
    const empty = mkdtempSync(join(base, "empty-"));
    expect(openBundleCache(empty)).toBe(empty);
    expect(readFileSync(join(empty, "CACHEDIR.TAG"), "utf8")).toMatch(/^Signature: 8a477f597d28d172789f06886806bc55\n/);
    writeFileSync(join(empty, "notes.txt"), "mine now");
    expect(openBundleCache(empty)).toBe(empty);
  });

  test.each([
    ["a trailing slash (which follows a final link)", (dir: string) => `${dir}/`],
    ["a '..' part", (dir: string) => `${join(dir, "x")}/../${dir.split("/").pop()}`],
    ["a '.' part", (dir: string) => `${dir}/.`],
    ["a doubled slash", (dir: string) => dir.replace(/\/([^/]*)$/, "//$1")],
  ])("a path with %s: none", (_what, spell) => {
    const dir = mkdtempSync(join(base, "spelled-"));
    expect(openBundleCache(dir)).toBe(dir);
    expect(openBundleCache(spell(dir))).toBeNull();
  });

  test("made missing folders are 0700, each the user's", () => {
    const top = mkdtempSync(join(base, "deep-"));
    const dir = join(top, "a", "b", "bundles");
    expect(openBundleCache(dir)).toBe(dir);
    for (const folder of [join(top, "a"), join(top, "a", "b"), dir]) expect(statSync(folder).mode & 0o777).toBe(0o700);
  });

  (process.geteuid?.() === 0 ? test : test.skip)(
    "another user's link on the way (planted in a sticky folder), or another user's folder: none",
    () => {
      const sticky = mkdtempSync(join(base, "sticky-"));
      chmodSync(sticky, 0o1777);
      const mine = mkdtempSync(join(base, "mine-"));
      const planted = join(sticky, "bundles");
      symlinkSync(mine, planted);
      lchownSync(planted, 12_345, 12_345);
      expect(openBundleCache(join(planted, "x"))).toBeNull();
      expect(readdirSync(mine)).toEqual([]);
      const theirs = mkdtempSync(join(base, "theirs-"));
      chownSync(theirs, 12_345, 12_345);
      expect(openBundleCache(join(theirs, "bundles"))).toBeNull();
      expect(openBundleCache(theirs)).toBeNull();
    },
  );
});

test("the command's environment: off keeps nothing, a relative path is refused, else XDG_CACHE_HOME", () => {
  expect(readEnvironment({ TETHER_BUNDLE_CACHE: "off" }).bundleCache).toBe(false);
  expect(() => readEnvironment({ TETHER_BUNDLE_CACHE: "cache" })).toThrow(EnvironmentError);
  expect(() => readEnvironment({ TETHER_BUNDLE_CACHE: "cache" })).toThrow("TETHER_BUNDLE_CACHE must be off");
  expect(readEnvironment({ TETHER_BUNDLE_CACHE: "/x/y", XDG_CACHE_HOME: "/c" }).bundleCache).toBe("/x/y");
  expect(readEnvironment({ TETHER_BUNDLE_CACHE: "off", XDG_CACHE_HOME: "/c" }).bundleCache).toBe(false);
  expect(readEnvironment({ XDG_CACHE_HOME: "/c" }).bundleCache).toBe("/c/tether/bundles");
  // A relative XDG_CACHE_HOME is ignored, as the XDG spec says: the library's default applies.
  expect(readEnvironment({ XDG_CACHE_HOME: "relative" }).bundleCache).toBeUndefined();
  expect(openBundleCache(false)).toBeNull();
  expect(openBundleCache("relative")).toBeNull();
});

test("the least recently used go first past the bound; a hit counts as a use; old scratch files go", () => {
  expect(openBundleCache(cache)).toBe(cache);
  const answer = { ok: true as const, code: "x", sources: [] };
  const keys = Array.from({ length: MAX_ENTRIES + 2 }, (_, i) => i.toString(16).padStart(64, "0"));
  const at = (i: number) => new Date(1_700_000_000_000 + i * 1000);
  for (const [i, key] of keys.slice(0, MAX_ENTRIES).entries()) {
    keepBundle(cache, key, answer);
    utimesSync(join(cache, `${key}.json`), at(i), at(i));
  }
  // The oldest, found again, is now the most recently used.
  expect(keptBundle(cache, keys[0]!)).toEqual(answer);
  const leftOver = join(cache, `${keys[0]}.json.0123456789abcdef.tmp`);
  const writing = join(cache, `${keys[1]}.json.fedcba9876543210.tmp`);
  writeFileSync(leftOver, "half");
  // Not the cache's own names: never trimmed.
  for (const other of ["other.tmp", "notes.json"]) {
    writeFileSync(join(cache, other), "");
    utimesSync(join(cache, other), at(0), at(0));
  }
  writeFileSync(writing, "half");
  utimesSync(leftOver, at(0), at(0));
  keepBundle(cache, keys[MAX_ENTRIES]!, answer);
  keepBundle(cache, keys[MAX_ENTRIES + 1]!, answer);
  const left = keptFiles();
  expect(left).toHaveLength(MAX_ENTRIES);
  expect(left).toContain(`${keys[0]}.json`);
  expect(left).not.toContain(`${keys[1]}.json`);
  expect(left).not.toContain(`${keys[2]}.json`);
  expect(left).toContain(`${keys[3]}.json`);
  expect(readdirSync(cache).filter((name) => name.endsWith(".tmp"))).toEqual([basename(writing), "other.tmp"].sort());
  expect(readdirSync(cache)).toEqual(expect.arrayContaining(["CACHEDIR.TAG", "other.tmp", "notes.json"]));
});

describe("what the key sees", () => {
  /** Every variation of a folder a job could tell apart: each gives a digest of its own. */
  const variations: Array<[string, (dir: string) => void]> = [
    ["as made", () => {}],
    ["a byte changed", (dir) => writeFileSync(join(dir, "a.ts"), "export const a = 2;\n")],
    ["a byte added", (dir) => writeFileSync(join(dir, "a.ts"), "export const a = 1;;\n")],
    ["a mode changed", (dir) => chmodSync(join(dir, "a.ts"), 0o755)],
    ["a file renamed", (dir) => execFileSync("mv", [join(dir, "a.ts"), join(dir, "b.ts")])],
    ["an empty folder added", (dir) => mkdirSync(join(dir, "empty"))],
    ["an empty file added", (dir) => writeFileSync(join(dir, "empty"), "")],
    ["a link added", (dir) => symlinkSync("a.ts", join(dir, "l.ts"))],
    ["a link to elsewhere", (dir) => symlinkSync("/etc/hostname", join(dir, "l.ts"))],
    ["a FIFO added", (dir) => execFileSync("mkfifo", [join(dir, "l.ts")])],
    [
      "a file's first bytes moved into its name",
      (dir) => {
        rmSync(join(dir, "a.ts"));
        writeFileSync(join(dir, "a.tsexport"), " const a = 1;\n");
      },
    ],
    [
      "two files' bytes shifted between them",
      (dir) => {
        writeFileSync(join(dir, "a.ts"), "export const a = 1;\nx");
        writeFileSync(join(dir, "c.ts"), "export const c = 3;\n".slice(1));
      },
    ],
  ];

  test("each variation of a folder has its own digest; the same bytes elsewhere have the same", () => {
    const digests = new Map<string, string>();
    for (const [what, vary] of variations) {
      const dir = join(base, `vary-${folders++}`);
      mkdirSync(dir);
      writeFileSync(join(dir, "a.ts"), "export const a = 1;\n");
      writeFileSync(join(dir, "c.ts"), "export const c = 3;\n");
      vary(dir);
      const snapshot = snapshotFolder(dir, envJail().identity);
      try {
        const seen = [...digests].find(([, digest]) => digest === snapshot.digest);
        expect(seen?.[0] ?? what).toBe(what);
        digests.set(what, snapshot.digest);
      } finally {
        snapshot.remove();
      }
    }
    const again = join(base, `vary-${folders++}`);
    mkdirSync(again);
    writeFileSync(join(again, "a.ts"), "export const a = 1;\n");
    writeFileSync(join(again, "c.ts"), "export const c = 3;\n");
    const snapshot = snapshotFolder(again, envJail().identity);
    snapshot.remove();
    expect(snapshot.digest).toBe(digests.get("as made"));
  });

  test("an SDK file rewritten with its size and mtime put back changes the stamp (its ctime moved)", async () => {
    const sdk = join(base, `sdk-${folders++}`);
    mkdirSync(join(sdk, "wire"), { recursive: true });
    const file = join(sdk, "wire", "x.ts");
    writeFileSync(file, "export const x = 1;\n");
    const before = treeStamp([sdk]);
    expect(treeStamp([sdk])).toBe(before);
    const st = statSync(file);
    // ctime has a clock's resolution: wait for it to move rather than for a time.
    for (let tries = 0; statSync(file).ctimeMs === st.ctimeMs && tries < 1000; tries++) {
      writeFileSync(file, "export const x = 2;\n");
      utimesSync(file, st.atime, st.mtime);
      await new Promise((done) => setImmediate(done));
    }
    expect(treeStamp([sdk])).not.toBe(before);
    const added = treeStamp([sdk]);
    writeFileSync(join(sdk, "wire", "y.ts"), "");
    expect(treeStamp([sdk])).not.toBe(added);
  });
});
