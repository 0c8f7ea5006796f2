/**
 * What each artifact was built from (the `artifacts` and `source_files`
 * tables): recorded at install, read by the review of an upgrade to say which
 * source files changed (and, with `--diff`, how), pruned to the artifacts that
 * an install or an extension's latest approval still names. The manifest's
 * text is kept beside them, by its hash (the manifest hash installs and
 * approvals pin), so its changes can be shown too.
 */
import { createHash } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import type { SourceFile } from "../install/source-file.js";
import type { Orm } from "../store/open.js";
import { artifacts, sourceFiles } from "../store/schema.js";

/** One source file as recorded: its path in the folder, hash and size. */
export interface SourceEntry {
  readonly path: string;
  readonly sha256: string;
  /** null: not known (a manifest whose text was not kept). */
  readonly bytes: number | null;
}

export interface ArtifactRecord {
  readonly artifactHash: string;
  readonly bytes: number;
  readonly sources: readonly SourceEntry[];
  readonly sourceDir: string;
}

/** Files past this size are listed (path, hash, size) but their contents are not kept: `--diff` says so. */
export const MAX_KEPT_SOURCE_BYTES = 1024 * 1024;

/** The store, or a transaction on it. */
type Db = Orm | Parameters<Parameters<Orm["transaction"]>[0]>[0];

/**
 * Records what `extension`'s artifact was built from (read from `sourceDir`), and keeps the text of
 * the manifest it was installed with.
 */
export function recordArtifact(
  db: Db,
  extension: string,
  artifact: { sha256: string; bytes: number; sources: readonly SourceFile[] },
  sourceDir: string,
  manifest: Buffer,
): void {
  const entries = artifact.sources.map((s) => ({ path: s.path, sha256: s.sha256, bytes: s.content.length }));
  const row = {
    extension,
    artifactHash: artifact.sha256,
    bytes: artifact.bytes,
    sources: JSON.stringify(entries),
    sourceDir,
  };
  db.insert(artifacts)
    .values(row)
    .onConflictDoUpdate({ target: [artifacts.extension, artifacts.artifactHash], set: row })
    .run();
  const kept = [
    ...artifact.sources,
    { sha256: createHash("sha256").update(manifest).digest("hex"), content: manifest },
  ];
  for (const s of kept) {
    if (s.content.length > MAX_KEPT_SOURCE_BYTES) continue;
    db.insert(sourceFiles).values({ sha256: s.sha256, content: s.content }).onConflictDoNothing().run();
  }
}

/** The record of `extension`'s artifact `artifactHash`, or null (installed by a broker that did not record it). */
export function artifactRecord(db: Db, extension: string, artifactHash: string): ArtifactRecord | null {
  const row = db
    .select()
    .from(artifacts)
    .where(and(eq(artifacts.extension, extension), eq(artifacts.artifactHash, artifactHash)))
    .get();
  if (row === undefined) return null;
  return {
    artifactHash: row.artifactHash,
    bytes: row.bytes,
    sources: JSON.parse(row.sources) as SourceEntry[],
    sourceDir: row.sourceDir,
  };
}

/** A kept source file's contents, or null (too large to keep, or pruned). */
export function sourceContent(db: Db, sha256: string): Buffer | null {
  return (
    db.select({ content: sourceFiles.content }).from(sourceFiles).where(eq(sourceFiles.sha256, sha256)).get()
      ?.content ?? null
  );
}

/** An install of the artifact row (in pruneArtifactRecords' first statement). */
const INSTALLED_ARTIFACT = sql.raw(
  "SELECT 1 FROM installs i WHERE i.name = artifacts.extension AND i.artifact_hash = artifacts.artifact_hash",
);
/** The manifests the latest approval of each extension names (in pruneArtifactRecords' second statement). */
const LATEST_APPROVED_MANIFESTS = sql.raw(
  "SELECT a.manifest_hash FROM approvals a " +
    "WHERE a.id = (SELECT max(b.id) FROM approvals b WHERE b.extension = a.extension)",
);

/**
 * Drops the records no install and no latest approval names, then the contents no record, install
 * or latest approval names.
 */
export function pruneArtifactRecords(db: Db): void {
  db.run(sql`
    DELETE FROM artifacts
    WHERE NOT EXISTS (${INSTALLED_ARTIFACT})
      AND NOT EXISTS (
        SELECT 1 FROM approvals a
        WHERE a.extension = artifacts.extension AND a.artifact_hash = artifacts.artifact_hash
          AND a.id = (SELECT max(b.id) FROM approvals b WHERE b.extension = artifacts.extension))`);
  db.run(sql`
    DELETE FROM source_files
    WHERE sha256 NOT IN (SELECT json_extract(j.value, '$.sha256') FROM artifacts, json_each(artifacts.sources) AS j)
      AND sha256 NOT IN (SELECT manifest_hash FROM installs)
      AND sha256 NOT IN (${LATEST_APPROVED_MANIFESTS})`);
}
