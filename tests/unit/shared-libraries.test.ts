/**
 * The jail's library list is kept beside the compiled jail programs, so a broker process's
 * first satellite does not wait on `ldd`: the kept list is used only while it is well-formed,
 * made for this very binary, and every library it names still exists.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
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

  // Proof the kept file is what is read: a different list of existing files comes back.
  writeFileSync(keptFile(), JSON.stringify(["/etc/hostname"]));
  expect(librariesOf(binary, keep)).toEqual(["/etc/hostname"]);
});

const spoiled: Array<[string, string]> = [
  ["not JSON", "[/lib"],
  ["not a list", JSON.stringify({ libs: ["/etc/hostname"] })],
  ["a relative path", JSON.stringify(["lib/libc.so.6"])],
  ["a library that is gone", JSON.stringify(["/nonexistent/libgone.so.1"])],
  ["a path that is not text", JSON.stringify([42])],
  ["too many entries", JSON.stringify(Array.from({ length: 257 }, () => "/etc/hostname"))],
  ["too large", JSON.stringify([`/${"a".repeat(70_000)}`])],
];

test.each(spoiled)("a kept list with %s is not used: ldd's list replaces it", (_what, text) => {
  librariesOf(binary, keep);
  const file = keptFile();
  writeFileSync(file, text);
  expect(librariesOf(binary, keep)).toEqual(lddPaths());
  expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(lddPaths());
});

test("a binary changed in place (its times) gets its own list, not the one kept for it before", () => {
  librariesOf(binary, keep);
  writeFileSync(keptFile(), JSON.stringify(["/etc/hostname"]));
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
