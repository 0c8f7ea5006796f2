/**
 * Collects what nothing under the home refers to any more: artifacts no
 * install names (replaced by a reinstall, left by an uninstall, or by a crash
 * between the write and the store's commit, `*.tmp` included), Deno caches of
 * artifacts no longer installed, and the source records no install or latest
 * approval names. It runs in one immediate transaction, as an install's write
 * and record do, so it never sees an artifact written but not yet recorded.
 * Only names the broker makes are touched.
 */
import { readdirSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import type { Store } from "../store/open.js";
import { installs } from "../store/schema.js";
import { pruneArtifactRecords } from "./artifact-records.js";

export interface Collected {
  /** Artifact files removed (names in the artifacts folder). */
  readonly artifacts: readonly string[];
  /** Deno cache folders removed (names in cache/deno). */
  readonly caches: readonly string[];
  /** Artifacts kept: one per install. */
  readonly kept: number;
}

/** `<name>-<16 hex>.js`, and its temporary `.tmp` while an install writes it (registry.ts). */
const ARTIFACT_NAME = /^[a-z][a-z0-9_-]{0,63}-[0-9a-f]{16}\.js(?:\.tmp)?$/;
/**
 * `<32 hex of the artifact's sha256>-<16 hex of the Deno binary>` (jail/deno-cache.ts); `.warming-`
 * folders are another broker's work.
 */
const CACHE_NAME = /^([0-9a-f]{32})-[0-9a-f]{16}$/;

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Removes the unreferenced artifacts under `artifactsDir`, caches under `denoCacheDir` and records in `store`. */
export function collectUnreferenced(store: Store, artifactsDir: string, denoCacheDir: string): Collected {
  return store.orm.transaction(
    (tx) => {
      const rows = tx.select({ path: installs.artifactPath, hash: installs.artifactHash }).from(installs).all();
      const kept = new Set(rows.map((r) => basename(r.path)));
      const installed = new Set(rows.map((r) => r.hash.slice(0, 32)));
      const removedArtifacts = list(artifactsDir).filter((name) => ARTIFACT_NAME.test(name) && !kept.has(name));
      for (const name of removedArtifacts) rmSync(join(artifactsDir, name), { force: true });
      const removedCaches = list(denoCacheDir).filter((name) => {
        const hash = CACHE_NAME.exec(name)?.[1];
        return hash !== undefined && !installed.has(hash);
      });
      for (const name of removedCaches) rmSync(join(denoCacheDir, name), { recursive: true, force: true });
      pruneArtifactRecords(tx);
      return { artifacts: removedArtifacts, caches: removedCaches, kept: rows.length };
    },
    { behavior: "immediate" },
  );
}
