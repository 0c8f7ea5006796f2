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
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, parse } from "node:path";
import { createHash } from "node:crypto";

/** An unused high uid/gid: above systemd's container and dynamic ranges, below 2^31. It owns nothing on the host. */
export const DEFAULT_JAIL_UID = 2_147_000_000;

/** Where a root broker keeps what the jail uid must reach. */
export const DEFAULT_JAIL_ROOT = "/var/lib/tether-jail";

export interface JailIdentity {
  readonly uid: number;
  readonly gid: number;
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0 || n >= 2 ** 32 - 1) throw new Error(`${name} must be a positive uid/gid other than root, not '${raw}'`);
  return n;
}

/** The host uid/gid satellites run as, or null when the broker is not root (then: the broker's own). */
export function jailIdentity(): JailIdentity | null {
  if (process.getuid?.() !== 0) return null;
  const uid = envNumber("TETHER_JAIL_UID", DEFAULT_JAIL_UID);
  return { uid, gid: envNumber("TETHER_JAIL_GID", uid) };
}

function jailRoot(): string {
  const root = process.env.TETHER_JAIL_ROOT ?? DEFAULT_JAIL_ROOT;
  mkdirSync(join(root, "run"), { recursive: true, mode: 0o711 });
  // Traversable, not listable: one satellite's uid cannot enumerate the others' folders.
  chmodSync(root, 0o711);
  chmodSync(join(root, "run"), 0o711);
  return root;
}

/** Where satellite folders go: the jail root's run/ under a root broker, the temp folder otherwise. */
function satelliteDirParent(identity: JailIdentity | null): string {
  return identity === null ? tmpdir() : join(jailRoot(), "run");
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

function alive(pid: number): boolean {
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

const copies = new Map<string, string>();

/** The Deno binary as the jail's uid can run it: in place when reachable, else a copy in the jail root. */
export function denoForJail(deno: string, identity: JailIdentity | null): string {
  if (identity === null || reachableByOthers(deno)) return deno;
  const hit = copies.get(deno);
  if (hit !== undefined) return hit;
  const st = statSync(deno);
  const key = createHash("sha256").update(`${deno}\0${st.size}\0${st.mtimeMs}`).digest("hex").slice(0, 16);
  const target = join(jailRoot(), `deno-${key}`);
  if (!existsSync(target)) {
    const scratch = `${target}.${process.pid}.tmp`;
    copyFileSync(deno, scratch);
    chmodSync(scratch, 0o755);
    renameSync(scratch, target);
  }
  copies.set(deno, target);
  return target;
}
