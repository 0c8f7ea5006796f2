/**
 * Who the jail runs as on the host, and the host folders it needs to reach.
 *
 * A broker running as root must not hand the jail root's uid: inside bwrap's
 * user namespace uid 0 is still host uid 0 (bwrap maps the sandbox to its
 * caller). So the launcher becomes an unprivileged uid *before* bwrap, and
 * then bwrap resolves every bind source with that uid's rights: the socket
 * folders live where it can reach them (a root-owned, world-traversable jail
 * root, each folder owned by the jail uid), and a Deno binary it cannot reach
 * where it is installed is copied there once. A broker that is not root runs
 * the jail as its own uid (bwrap's unprivileged user namespace) and needs none
 * of this.
 */
import {
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, parse } from "node:path";
import { createHash, randomBytes } from "node:crypto";

/** An unused high uid/gid: above systemd's container and dynamic ranges, below 2^31. It owns nothing on the host. */
export const DEFAULT_JAIL_UID = 2_147_000_000;

/** Where a root broker keeps what the jail uid must reach. */
export const DEFAULT_JAIL_ROOT = "/var/lib/tether-jail";

export interface JailIdentity {
  readonly uid: number;
  readonly gid: number;
  /** Where the jail's folders go (socket folders, a reachable copy of Deno). */
  readonly root: string;
}

/** Who a root broker's jail runs as, and where its folders go; each absent field takes its default. */
export interface JailIdentityOptions {
  /** Default DEFAULT_JAIL_UID. */
  readonly uid?: number;
  /** Default: the uid. */
  readonly gid?: number;
  /** Default DEFAULT_JAIL_ROOT. */
  readonly root?: string;
}

/** True for a uid/gid the jail may run as: a positive integer below 2^32 - 1 (never root). */
export function isJailId(n: number): boolean {
  return Number.isInteger(n) && n > 0 && n < 2 ** 32 - 1;
}

/** The host uid/gid satellites run as, or null when the broker is not root (then: the broker's own). */
export function jailIdentity(options: JailIdentityOptions = {}): JailIdentity | null {
  if (process.getuid?.() !== 0) return null;
  const uid = options.uid ?? DEFAULT_JAIL_UID;
  const gid = options.gid ?? uid;
  for (const [what, n] of [
    ["uid", uid],
    ["gid", gid],
  ] as const) {
    if (!isJailId(n)) throw new Error(`The jail ${what} must be a positive uid/gid other than root, not ${n}`);
  }
  return { uid, gid, root: options.root ?? DEFAULT_JAIL_ROOT };
}

function jailRoot(root: string): string {
  mkdirSync(join(root, "run"), { recursive: true, mode: 0o711 });
  // Traversable, not listable: one satellite's uid cannot enumerate the others' folders.
  chmodSync(root, 0o711);
  chmodSync(join(root, "run"), 0o711);
  return root;
}

/** Where satellite folders go: the jail root's run/ under a root broker, the temp folder otherwise. */
function satelliteDirParent(identity: JailIdentity | null): string {
  return identity === null ? tmpdir() : join(jailRoot(identity.root), "run");
}

/**
 * A fresh private folder for one satellite's socket, reachable by the jail's uid. Its name
 * carries the broker's pid, so a later broker can sweep what a killed one left.
 */
export function makeSatelliteDir(identity: JailIdentity | null): string {
  const dir = mkdtempSync(join(satelliteDirParent(identity), `tether-sat-${process.pid}-`));
  if (identity !== null) chownSync(dir, identity.uid, identity.gid);
  return dir;
}

/** Whether a process of this pid exists (someone else's counts). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, it is someone else's.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes satellite folders whose broker is gone (killed with SIGKILL, it removed none). Returns them. */
export function sweepSatelliteDirs(identity: JailIdentity | null = jailIdentity()): string[] {
  const parent = satelliteDirParent(identity);
  const swept: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return swept;
  }
  for (const name of names) {
    const m = /^tether-sat-(\d+)-/.exec(name);
    if (m === null || alive(Number(m[1]))) continue;
    const dir = join(parent, name);
    try {
      // Only our own kind: a folder (never a link) owned by this uid or the jail's.
      const st = lstatSync(dir);
      if (!st.isDirectory() || (st.uid !== process.getuid?.() && st.uid !== identity?.uid)) continue;
      rmSync(dir, { recursive: true, force: true });
      swept.push(dir);
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
  return swept;
}

/** True when `path` can be reached and run by a uid that owns nothing on its way (mode bits for "other"). */
export function reachableByOthers(path: string): boolean {
  let dir = dirname(path);
  const { root } = parse(path);
  for (;;) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === root) break;
    dir = dirname(dir);
  }
  return (statSync(path).mode & 0o005) === 0o005;
}

/** A binary by its path, size and mtime: what a copy of it, or a cache made with it, is named by. */
export function binaryKey(binary: string): string {
  const st = statSync(binary);
  return createHash("sha256").update(`${binary}\0${st.size}\0${st.mtimeMs}`).digest("hex").slice(0, 16);
}

/**
 * The Deno binary as the jail's uid can run it: in place when reachable, else a copy in
 * the jail root. The copy is named by its content (`deno-content-<sha256>`), so every
 * checkout or install of the same Deno shares one file (~95 MB; each used to leave its
 * own), and linked under a name for this binary's path, size and mtime, so a later
 * broker finds it without reading the binary again.
 */
export function denoForJail(deno: string, identity: JailIdentity | null): string {
  if (identity === null || reachableByOthers(deno)) return deno;
  const key = binaryKey(deno);
  const root = jailRoot(identity.root);
  const target = join(root, `deno-${key}`);
  if (existsSync(target)) return target;
  const scratch = join(root, `deno-${key}.${randomBytes(8).toString("hex")}.tmp`);
  const link = `${scratch}.link`;
  try {
    copyFileSync(deno, scratch);
    chmodSync(scratch, 0o755);
    // Named by what was copied (not by the source, which could change meanwhile).
    const content = join(root, `deno-content-${fileSha256(scratch).slice(0, 32)}`);
    if (!existsSync(content)) renameSync(scratch, content);
    try {
      linkSync(content, link);
      renameSync(link, target);
    } catch {
      // No hard links here: this key gets a copy of its own, as before.
      if (!existsSync(scratch)) copyFileSync(content, scratch);
      renameSync(scratch, target);
    }
  } finally {
    rmSync(scratch, { force: true });
    rmSync(link, { force: true });
  }
  return target;
}

function fileSha256(path: string): string {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) hash.update(chunk.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}
