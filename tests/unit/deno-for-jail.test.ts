/**
 * A Deno binary the jail's uid cannot reach is copied into the jail root once per
 * distinct content: two checkouts of the same Deno share one file, linked under a
 * name for each binary's path, size and mtime.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { denoForJail, type JailIdentity } from "../../broker/jail/identity.js";

let scratch: string;
let identity: JailIdentity;

/** A "Deno" with `content` in a folder only its owner may enter (so the jail's uid could not run it there). */
function hiddenBinary(name: string, content: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = join(dir, "deno");
  writeFileSync(file, content, { mode: 0o755 });
  return file;
}

const contentCopies = () => readdirSync(identity.root).filter((n) => n.startsWith("deno-content-"));

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), "tether-deno-copy-"));
  identity = { uid: 2_147_000_000, gid: 2_147_000_000, root: join(scratch, "jail") };
});
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

test("a reachable binary is used where it is, and nothing is copied", () => {
  const open = join(scratch, "deno");
  writeFileSync(open, "#!/bin/true\n", { mode: 0o755 });
  chmodSync(scratch, 0o755);
  expect(denoForJail(open, identity)).toBe(open);
  expect(denoForJail(hiddenBinary("x", "x"), null)).toBe(join(scratch, "x", "deno"));
});

test("two checkouts of the same Deno share one copy; another Deno gets its own", () => {
  const first = denoForJail(hiddenBinary("checkout-1", "deno 2.9.6"), identity);
  const second = denoForJail(hiddenBinary("checkout-2", "deno 2.9.6"), identity);
  const other = denoForJail(hiddenBinary("checkout-3", "deno 2.9.7"), identity);
  expect(new Set([first, second, other]).size).toBe(3);
  expect(statSync(first).ino).toBe(statSync(second).ino);
  expect(statSync(other).ino).not.toBe(statSync(first).ino);
  expect(contentCopies()).toHaveLength(2);
  expect(readFileSync(first, "utf8")).toBe("deno 2.9.6");
  expect(readFileSync(other, "utf8")).toBe("deno 2.9.7");
  expect(statSync(first).mode & 0o777).toBe(0o755);
  // Asked again: the same file, nothing new.
  expect(denoForJail(join(scratch, "checkout-1", "deno"), identity)).toBe(first);
  expect(
    readdirSync(identity.root)
      .filter((n) => n.startsWith("deno-"))
      .sort(),
  ).toHaveLength(5);
});

test("a binary replaced in place gets the copy of what it is now", () => {
  const path = hiddenBinary("checkout", "deno 2.9.6");
  const before = denoForJail(path, identity);
  writeFileSync(path, "deno 3.0.0 (a longer build)");
  const after = denoForJail(path, identity);
  expect(after).not.toBe(before);
  expect(readFileSync(after, "utf8")).toBe("deno 3.0.0 (a longer build)");
  expect(readFileSync(before, "utf8")).toBe("deno 2.9.6");
});
