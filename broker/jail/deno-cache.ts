/**
 * Deno's caches for one artifact, made once and then copied into every jail
 * that runs it (bwrap `--file`: each satellite reads and writes a private copy
 * in its own /tmp — Deno opens its caches read-write, and given a read-only
 * one it silently runs without).
 *
 * Without them every boot re-runs Deno's analysis of the whole artifact and
 * V8's compile (`npx tsx bench/boot.ts` measures what they save). The
 * cache is keyed by the artifact's hash and the Deno binary, so nothing one
 * artifact's boot wrote is read by another's; it is written by Deno itself (the
 * extension has no permission on `/tmp/deno`) during one complete warm-up boot
 * of the *approved* artifact — never at install, before anyone approved it —
 * into a fresh folder renamed into place when done, so a broker that dies
 * mid-warm-up or two brokers warming at once leave no half-written cache.
 */
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { copyExactly } from "./copy-exactly.js";
import { join } from "node:path";
import { runHostJob, type HostJob, type HostJobSetup } from "./host-job.js";
import { sqliteJob } from "../store/db-processes.js";
import { binaryKey, jailIdentity, makeSatelliteDir, type JailIdentity } from "./identity.js";
import { DENO_CACHE_FILES, DENO_CACHE_MAX_BYTES } from "./sandbox.js";

export { DENO_CACHE_MAX_BYTES };

export interface DenoCacheMount {
  readonly dir: string;
  readonly writable: boolean;
}

/** Resolves to the read-only mount for a boot, or null to boot with a fresh, private cache. */
export type DenoCacheSource = () => Promise<DenoCacheMount | null>;
// `writable: false` means "copy these files in"; `true` is the warm-up's own bind.

/**
 * Deno keeps its caches as SQLite files in WAL mode, and a warm-up may leave
 * rows in the -wal files. Only the main files are copied into jails: fold each
 * WAL back into its file and switch to rollback journaling, so each file holds
 * everything by itself. The files are what a jail that ran the extension's
 * code wrote, so SQLite reads them in a database jail too, which sees `dir`
 * (the warm-up's own folder) alone. True when every file was folded.
 */
/** The jail that folds the caches `names` in `dir`: SQLite's, showing it `dir` alone (at /cache). */
export function denoCacheFoldJob(dir: string, names: readonly string[], setup: HostJobSetup): HostJob {
  // The jail's uid writes them (a root broker's is not the folder's owner unless it warmed them itself).
  const owner = jailIdentity(setup.jail?.identity);
  if (owner !== null)
    for (const path of [dir, ...readdirSync(dir).map((n) => join(dir, n))]) chownSync(path, owner.uid, owner.gid);
  const at = (name: string) => (setup.sandbox === "none" ? join(dir, name) : `/cache/${name}`);
  return sqliteJob(
    "Deno cache fold",
    [{ host: dir, jail: "/cache", writable: true }],
    ["fold", ...names.map(at)],
    DENO_CACHE_MAX_BYTES,
    setup,
  );
}

async function settle(dir: string, setup: HostJobSetup): Promise<boolean> {
  const names = DENO_CACHE_FILES.filter((name) => existsSync(join(dir, name)));
  if (names.length === 0) return true;
  const r = await runHostJob(denoCacheFoldJob(dir, names, setup), "", 30_000, 64 * 1024);
  return r.exitCode === 0;
}

/** A cache too large to copy into every jail is dropped: that artifact boots without one, as before. */
function keepWithinBound(dir: string): void {
  const names = readdirSync(dir);
  const total = names.reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  if (total <= DENO_CACHE_MAX_BYTES) return;
  for (const name of names) rmSync(join(dir, name), { recursive: true, force: true });
}

/**
 * The cache source for `artifactSha256` under `root` (the home's cache folder).
 * `warm(mount)` must boot the artifact once with that writable mount and let it
 * exit cleanly; a failed warm-up leaves no cache (boots then use a fresh one).
 * `warming` holds the warm-ups in flight (the broker's own), so concurrent boots
 * share one.
 */
export function denoCacheFor(
  root: string,
  artifactSha256: string,
  deno: string,
  warm: (mount: DenoCacheMount) => Promise<void>,
  identity: JailIdentity | null = null,
  warming: Map<string, Promise<DenoCacheMount | null>> = new Map(),
  jobs: HostJobSetup = {},
): DenoCacheSource {
  return async () => {
    const dir = join(root, `${artifactSha256.slice(0, 32)}-${binaryKey(deno)}`);
    if (existsSync(dir)) return { dir, writable: false };
    let pending = warming.get(dir);
    if (pending === undefined) {
      pending = (async () => {
        mkdirSync(root, { recursive: true, mode: 0o700 });
        const scratch = mkdtempSync(`${dir}.warming-`);
        // Where the jail writes: a folder its uid can reach when it is not the broker's (see identity.ts).
        const work = identity === null ? scratch : makeSatelliteDir(identity);
        const bound = DENO_CACHE_FILES.flatMap((name) => [name, `${name}-wal`, `${name}-shm`]);
        // The only files the warm-up can write on the host (bound one by one, each bounded; see sandbox.ts).
        for (const file of bound) {
          writeFileSync(join(work, file), "", { mode: 0o600 });
          if (identity !== null) chownSync(join(work, file), identity.uid, identity.gid);
        }
        try {
          await warm({ dir: work, writable: true });
          if (!(await settle(work, jobs))) return null;
          // Only the main files are kept: whatever else the folder holds now is not a cache.
          for (const name of readdirSync(work)) {
            const path = join(work, name);
            const st = lstatSync(path);
            // A link or anything but a regular file there was not written by SQLite: not a cache.
            if (!(DENO_CACHE_FILES as readonly string[]).includes(name) || !st.isFile())
              rmSync(path, { recursive: true, force: true });
            else if (work !== scratch) copyExactly(path, join(scratch, name), st);
          }
          keepWithinBound(scratch);
          try {
            renameSync(scratch, dir);
          } catch {
            // Another broker finished first: use its cache.
          }
          return existsSync(dir) ? { dir, writable: false } : null;
        } catch {
          return null;
        } finally {
          rmSync(scratch, { recursive: true, force: true });
          if (work !== scratch) rmSync(work, { recursive: true, force: true });
        }
      })().finally(() => warming.delete(dir));
      warming.set(dir, pending);
    }
    return pending;
  };
}
