/**
 * The jail's library list is kept beside the compiled jail programs, so a broker process's
 * first satellite does not wait on `ldd`. What the list names is bound into every jail, so a
 * kept list is used only when it is well-formed, made for this very binary, in a file and
 * folder nobody else may write, and every entry is still a shared library's file; and only a
 * complete list (ldd ran and found everything) is ever kept.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { librariesOf } from "../../broker/jail/libraries.js";

let dir: string;
let binary: string;
let keep: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tether-libs-"));
  // A small dynamically linked binary of our own, so its identity can be changed.
  binary = join(dir, "true");
  copyFileSync("/bin/true", binary);
  chmodSync(binary, 0o755);
  keep = join(dir, "native");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const keptFiles = () => readdirSync(keep).filter((f) => f.startsWith("libraries-"));
/** The one kept list's path. */
function keptFile(): string {
  const [only, ...more] = keptFiles();
  if (only === undefined || more.length > 0) throw new Error(`expected one kept list, found ${keptFiles().length}`);
  return join(keep, only);
}
const lddPaths = (): string[] =>
  execFileSync("ldd", [binary], { encoding: "utf8" })
    .split("\n")
    .map((line) => /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1])
    .filter((p): p is string => p !== undefined);

test("the first lookup runs ldd and keeps its list; the next reads the kept one", () => {
  const first = librariesOf(binary, keep);
  expect(first).toEqual(lddPaths());
  expect(first.some((p) => /\/libc\.so/.test(p))).toBe(true);
  expect(keptFiles()).toHaveLength(1);
  expect(JSON.parse(readFileSync(keptFile(), "utf8"))).toEqual(first);

  // Proof the kept file is what is read: a different list of existing libraries comes back.
  const loaderOnly = first.slice(-1);
  writeFileSync(keptFile(), JSON.stringify(loaderOnly));
  expect(librariesOf(binary, keep)).toEqual(loaderOnly);
});

const spoiled: Array<[string, string]> = [
  ["not JSON", "[/lib"],
  ["not a list", JSON.stringify({ libs: ["/lib/x86_64-linux-gnu/libc.so.6"] })],
  ["no entry at all", "[]"],
  ["a relative path", JSON.stringify(["lib/libc.so.6"])],
  ["a library that is gone", JSON.stringify(["/nonexistent/libgone.so.1"])],
  ["a path that is not text", JSON.stringify([42])],
  ["a file of the host that is no library", JSON.stringify(["/etc/hostname"])],
  ["a folder", JSON.stringify(["/"])],
  ["a folder named like a library", JSON.stringify(["<dir>/libfake.so.1"])],
  ["too many entries", JSON.stringify(Array.from({ length: 257 }, () => "/etc/hostname"))],
  ["too large", JSON.stringify([`/${"a".repeat(70_000)}`])],
];

test.each(spoiled)("a kept list with %s is not used: ldd's list replaces it", (_what, text) => {
  librariesOf(binary, keep);
  const file = keptFile();
  mkdirSync(join(dir, "libfake.so.1"));
  writeFileSync(file, text.replace("<dir>", dir));
  expect(librariesOf(binary, keep)).toEqual(lddPaths());
  expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(lddPaths());
});

const planted = (): string[] => lddPaths().slice(-1);

test.each([
  ["the kept file", () => chmodSync(keptFile(), 0o666)],
  ["its folder", () => chmodSync(keep, 0o777)],
])("a kept list is not used when %s is writable by others", (_what, open) => {
  librariesOf(binary, keep);
  writeFileSync(keptFile(), JSON.stringify(planted()));
  open();
  expect(librariesOf(binary, keep)).toEqual(lddPaths());
});

const asRoot = process.geteuid?.() === 0 ? test : test.skip;
asRoot("a kept list owned by another user is not used", () => {
  librariesOf(binary, keep);
  writeFileSync(keptFile(), JSON.stringify(planted()));
  chownSync(keptFile(), 65534, 65534);
  expect(librariesOf(binary, keep)).toEqual(lddPaths());
});

test("a list ldd could not make is not kept", () => {
  // No dynamic executable: ldd fails, and says so.
  const script = join(dir, "script");
  writeFileSync(script, "#!/bin/sh\n", { mode: 0o755 });
  expect(librariesOf(script, keep)).toEqual([]);
  expect(existsSync(keep) ? keptFiles() : []).toEqual([]);
});

test("another loader environment (LD_LIBRARY_PATH) gets its own list", () => {
  librariesOf(binary, keep);
  const before = process.env["LD_LIBRARY_PATH"];
  process.env["LD_LIBRARY_PATH"] = dir;
  try {
    librariesOf(binary, keep);
  } finally {
    if (before === undefined) delete process.env["LD_LIBRARY_PATH"];
    else process.env["LD_LIBRARY_PATH"] = before;
  }
  expect(keptFiles()).toHaveLength(2);
});

test("a binary changed in place (its times) gets its own list, not the one kept for it before", () => {
  librariesOf(binary, keep);
  writeFileSync(keptFile(), JSON.stringify(planted()));
  utimesSync(binary, new Date(2001, 1, 1), new Date(2001, 1, 1));
  expect(librariesOf(binary, keep)).toEqual(lddPaths());
  expect(keptFiles()).toHaveLength(2);
});

test("a folder that cannot be written still gives the list, and leaves nothing behind", () => {
  writeFileSync(keep, "a file where the folder would be");
  expect(librariesOf(binary, keep)).toEqual(lddPaths());
  expect(readdirSync(dir).sort()).toEqual(["native", "true"]);
});

test("without a folder to keep it in, the list is ldd's", () => {
  expect(librariesOf(binary)).toEqual(lddPaths());
});
