/**
 * The fleet's registry: installs and approvals live in the shared store, and
 * each host's own store holds a copy of them that its broker reads at every
 * call (synchronously, as a single broker reads its own).
 *
 * `pullRegistry` makes the host's copy equal to the fleet's — every install
 * and every approval, approval ids as the fleet numbered them — and writes
 * the artifacts this host lacks from the fleet's bytes, each checked against
 * the hash the install (and so the approval) names; an artifact whose bytes do
 * not hash to it is not installed here. `publishRegistry` sends the fleet what
 * a command changed in the host's copy since the last pull: installs made or
 * removed, approvals made, approvals revoked. Both run in one transaction on
 * each side, and a publish tells every broker with NOTIFY.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { and, eq, isNull, sql } from "drizzle-orm";
import type { Store } from "../open.js";
import * as lite from "../schema.js";
import type { PgStore } from "./open.js";
import * as fleetSchema from "./schema.js";
import type { SigningKey, TrustedKey } from "../../fleet-trust/operator-keys.js";
import { judgeApprovals, type Refusal } from "../../fleet-trust/judge-approvals.js";
import { signApproval, signRevocation } from "../../fleet-trust/signed-approvals.js";
import { parseManifest } from "../../install/manifest.js";

/** The channel every broker of the fleet listens on for registry changes. */
export const REGISTRY_CHANNEL = "tether_registry";
const REGISTRY_VERSION = "registry";
/** The tail of the counter's upsert: a row already there counts one more. */
const BUMP_VERSION = sql.raw("ON CONFLICT (name) DO UPDATE SET version = fleet_versions.version + 1");

type InstallRow = typeof lite.installs.$inferSelect;
type ApprovalRow = typeof lite.approvals.$inferSelect;

/** What the last pull saw, so a publish sends only what a command changed since. */
export interface RegistrySnapshot {
  /** fleet_versions.registry when it was read. */
  readonly version: number;
  /** By name: what identifies an install's content. */
  readonly installs: ReadonlyMap<string, string>;
  /** By id: revoked or not. */
  readonly approvals: ReadonlyMap<number, number | null>;
}

export interface PullResult {
  readonly snapshot: RegistrySnapshot;
  /** Whether the host's copy changed. */
  readonly changed: boolean;
  /** Installs left out here, each with why (an artifact missing from the fleet, or not matching its hash). */
  readonly problems: readonly string[];
  /** Approval rows refused here: no trusted operator's signature over exactly their facts. */
  readonly refused: readonly Refusal[];
  /** Revocations this host knows that the fleet lacks (made here while it could not be reached): to publish. */
  readonly unpublished: number;
}

/** A signed approval needs a key: why a publish without one is refused. */
export class UnsignedApprovalError extends Error {}

const installKey = (r: Pick<InstallRow, "manifestHash" | "artifactHash" | "updatedAt">): string =>
  `${r.manifestHash}:${r.artifactHash}:${r.updatedAt}`;
const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");
/** Where this host keeps an artifact: the name an install here would give it. */
const artifactFile = (artifactsDir: string, name: string, hash: string): string =>
  join(artifactsDir, `${name}-${hash.slice(0, 16)}.js`);

/** The fleet's registry version now (the polling fallback compares it). */
export async function registryVersion(fleet: PgStore): Promise<number> {
  const r = await fleet.pool.query<{ version: string }>("SELECT version FROM fleet_versions WHERE name = $1", [
    REGISTRY_VERSION,
  ]);
  return Number(r.rows[0]?.version ?? 0);
}

/** Every approval row of the fleet as stored (tether doctor --store judges them). */
export async function approvalsOfFleet(fleet: PgStore): Promise<ApprovalRow[]> {
  return (await fleet.pool.query("SELECT * FROM approvals ORDER BY id")).rows.map(approvalOf);
}

/**
 * Makes the host's installs and approvals equal to the fleet's — the approvals
 * a trusted operator key signed (fleet-trust/judge-approvals.ts), with the
 * revocations this host knows — and writes the artifacts those approvals name.
 */
export async function pullRegistry(
  fleet: PgStore,
  local: Store,
  artifactsDir: string,
  keys: readonly TrustedKey[],
): Promise<PullResult> {
  const client = await fleet.pool.connect();
  let version: number;
  let installs: InstallRow[];
  let approvals: ApprovalRow[];
  let judged: ReturnType<typeof judgeApprovals<ApprovalRow>>;
  const blobs = new Map<string, Buffer>();
  const records: Array<{
    artifact: typeof lite.artifacts.$inferInsert;
    contents: Array<{ sha256: string; content: Buffer }>;
  }> = [];
  const problems: string[] = [];
  try {
    // One snapshot of the three tables: an install and the approval pinning it are seen together.
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    version = Number(
      (
        await client.query<{ version: string }>("SELECT version FROM fleet_versions WHERE name = $1", [
          REGISTRY_VERSION,
        ])
      ).rows[0]?.version ?? 0,
    );
    installs = (await client.query("SELECT * FROM installs ORDER BY name")).rows.map(installOf);
    // The manifest a host parses must be the one the approval's hash
    // pins: a text altered beside its hash is not installed here.
    for (const row of installs) {
      if (sha256(Buffer.from(row.manifestText, "utf8")) !== row.manifestHash) {
        problems.push(
          `${row.name}: the fleet's manifest text does not hash ` +
            `to ${row.manifestHash.slice(0, 16)}; not installed on this host`,
        );
        continue;
      }
      // One row a host cannot read leaves that install out, never the whole pull.
      try {
        if (parseManifest(row.manifestText, row.name).name !== row.name)
          problems.push(`${row.name}: the fleet's manifest names another extension; not installed on this host`);
      } catch {
        problems.push(`${row.name}: the fleet's manifest text is not a manifest; not installed on this host`);
      }
    }
    judged = judgeApprovals(
      (await client.query("SELECT * FROM approvals ORDER BY id")).rows.map(approvalOf),
      keys,
      local.orm.select().from(lite.approvals).all(),
    );
    approvals = judged.rows;
    // Bytes are written only for an artifact an accepted approval
    // in force names: a row a database writer made runs nowhere.
    const named = new Set(
      approvals.filter((a) => a.revokedAt === null).map((a) => `${a.extension}\u0000${a.artifactHash}`),
    );
    for (const row of installs) {
      if (!named.has(`${row.name}\u0000${row.artifactHash}`) || problems.some((p) => p.startsWith(`${row.name}: `)))
        continue;
      const path = artifactFile(artifactsDir, row.name, row.artifactHash);
      if (existsSync(path) && sha256(readFileSync(path)) === row.artifactHash) continue;
      const blob = await client.query<{ content: Buffer }>(
        "SELECT content FROM artifact_blobs WHERE extension = $1 AND artifact_hash = $2",
        [row.name, row.artifactHash],
      );
      const content = blob.rows[0]?.content;
      if (content === undefined)
        problems.push(
          `${row.name}: the fleet has no artifact ${row.artifactHash.slice(0, 16)}; install it again from any host`,
        );
      else if (sha256(content) !== row.artifactHash)
        problems.push(
          `${row.name}: the fleet's artifact does not hash ` +
            `to ${row.artifactHash.slice(0, 16)}; not installed on this host`,
        );
      else blobs.set(row.name, content);
    }
    for (const row of installs) {
      const has = local.orm
        .select({ n: sql<number>`1` })
        .from(lite.artifacts)
        .where(and(eq(lite.artifacts.extension, row.name), eq(lite.artifacts.artifactHash, row.artifactHash)))
        .get();
      if (has !== undefined) continue;
      const record = (
        await client.query("SELECT * FROM artifacts WHERE extension = $1 AND artifact_hash = $2", [
          row.name,
          row.artifactHash,
        ])
      ).rows[0] as Raw | undefined;
      if (record === undefined) continue;
      const artifact = {
        extension: String(record.extension),
        artifactHash: String(record.artifact_hash),
        bytes: num(record.bytes),
        sources: String(record.sources),
        sourceDir: String(record.source_dir),
        createdAt: num(record.created_at),
      };
      let hashes: string[];
      try {
        hashes = recordedHashes(artifact.sources, row.manifestHash);
      } catch {
        problems.push(
          `${row.name}: the fleet's record of what artifact ${row.artifactHash.slice(0, 16)} ` +
            `was built from is not readable; not installed on this host`,
        );
        continue;
      }
      const contents = (
        await client.query<{ sha256: string; content: Buffer }>(
          "SELECT sha256, content FROM source_files WHERE sha256 = ANY($1)",
          [hashes],
        )
      ).rows;
      // Kept only when the bytes are what their hash says: a review on this host shows what was built, nothing else.
      records.push({ artifact, contents: contents.filter((c) => sha256(c.content) === c.sha256) });
    }
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
  const refused = new Set(problems.map((p) => p.slice(0, p.indexOf(":"))));
  const kept = installs
    .filter((r) => !refused.has(r.name))
    .map((r) => ({ ...r, artifactPath: artifactFile(artifactsDir, r.name, r.artifactHash) }));
  const changed = local.orm.transaction(
    (tx) => {
      const before = JSON.stringify([
        tx.select().from(lite.installs).orderBy(lite.installs.name).all(),
        tx.select().from(lite.approvals).orderBy(lite.approvals.id).all(),
      ]);
      // Written inside the immediate transaction, as an install
      // writes its artifact: the collector never sees it unrecorded.
      for (const [name, content] of blobs) {
        const row = kept.find((r) => r.name === name)!;
        writeFileSync(`${row.artifactPath}.tmp`, content, { mode: 0o600 });
        renameSync(`${row.artifactPath}.tmp`, row.artifactPath);
      }
      tx.delete(lite.installs).run();
      for (const row of kept) tx.insert(lite.installs).values(row).run();
      tx.delete(lite.approvals).run();
      for (const row of approvals) tx.insert(lite.approvals).values(row).run();
      for (const { artifact, contents } of records) {
        tx.insert(lite.artifacts).values(artifact).onConflictDoNothing().run();
        for (const c of contents) tx.insert(lite.sourceFiles).values(c).onConflictDoNothing().run();
      }
      const after = JSON.stringify([
        tx.select().from(lite.installs).orderBy(lite.installs.name).all(),
        tx.select().from(lite.approvals).orderBy(lite.approvals.id).all(),
      ]);
      return before !== after;
    },
    { behavior: "immediate" },
  );
  // The snapshot is the fleet's own state: a revocation it lacks shows as a change to publish.
  const fleetRevoked = new Map(judged.unpublished.map((r) => [r.id, null]));
  return {
    snapshot: snapshotOf(version, kept, approvals, fleetRevoked),
    changed,
    problems,
    refused: judged.refused,
    unpublished: judged.unpublished.length,
  };
}

/**
 * Sends the fleet what changed in the host's copy since `since` was pulled;
 * false when nothing had. Approvals are signed with `signer` (none: refused,
 * `UnsignedApprovalError`), revocations too when there is one; the signatures
 * are kept in the host's copy as well.
 */
export async function publishRegistry(
  fleet: PgStore,
  local: Store,
  since: RegistrySnapshot,
  signer: SigningKey | null,
): Promise<boolean> {
  const installs = local.orm.select().from(lite.installs).all();
  const unsigned = local.orm.select().from(lite.approvals).orderBy(lite.approvals.id).all();
  const made = installs.filter((r) => since.installs.get(r.name) !== installKey(r));
  const removed = [...since.installs.keys()].filter((name) => !installs.some((r) => r.name === name));
  const approvals = signed(local, unsigned, since, signer);
  const approved = approvals.filter((r) => !since.approvals.has(r.id));
  const revoked = approvals.filter(
    (r) => since.approvals.has(r.id) && since.approvals.get(r.id) === null && r.revokedAt !== null,
  );
  if (made.length + removed.length + approved.length + revoked.length === 0) return false;
  await fleet.orm.transaction(async (tx) => {
    for (const row of made) {
      // The bytes go with the record: every other host writes its copy from them.
      const content = readFileSync(row.artifactPath);
      await tx
        .insert(fleetSchema.artifactBlobs)
        .values({ extension: row.name, artifactHash: row.artifactHash, content })
        .onConflictDoNothing();
      await tx
        .insert(fleetSchema.installs)
        .values(row)
        .onConflictDoUpdate({ target: fleetSchema.installs.name, set: row });
      // What it was built from: the review's diff and the [storage] migrations' texts, on every host.
      const record = local.orm
        .select()
        .from(lite.artifacts)
        .where(and(eq(lite.artifacts.extension, row.name), eq(lite.artifacts.artifactHash, row.artifactHash)))
        .get();
      if (record === undefined) continue;
      await tx.insert(fleetSchema.artifacts).values(record).onConflictDoNothing();
      for (const sha of recordedHashes(record.sources, row.manifestHash)) {
        const content = local.orm
          .select({ content: lite.sourceFiles.content })
          .from(lite.sourceFiles)
          .where(eq(lite.sourceFiles.sha256, sha))
          .get()?.content;
        if (content !== undefined)
          await tx.insert(fleetSchema.sourceFiles).values({ sha256: sha, content }).onConflictDoNothing();
      }
    }
    for (const name of removed) {
      await tx.delete(fleetSchema.installs).where(eq(fleetSchema.installs.name, name));
    }
    for (const row of revoked) {
      await tx
        .update(fleetSchema.approvals)
        .set({ revokedAt: row.revokedAt, revokedBy: row.revokedBy, revocationSignature: row.revocationSignature })
        .where(and(eq(fleetSchema.approvals.id, row.id), isNull(fleetSchema.approvals.revokedAt)));
    }
    for (const row of approved) {
      // One approval in force per extension, whichever host approves: approvals of one extension queue here.
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`tether.approve:${row.extension}`}))`);
      await tx
        .update(fleetSchema.approvals)
        .set({ revokedAt: row.approvedAt, revokedBy: row.approvedBy })
        .where(and(eq(fleetSchema.approvals.extension, row.extension), isNull(fleetSchema.approvals.revokedAt)));
      const { id: _local, ...values } = row;
      await tx.insert(fleetSchema.approvals).values(values);
    }
    await tx.execute(sql`INSERT INTO fleet_versions (name, version) VALUES (${REGISTRY_VERSION}, 1) ${BUMP_VERSION}`);
    // Delivered when the transaction commits, to every broker listening.
    await tx.execute(sql`SELECT pg_notify(${REGISTRY_CHANNEL}, '')`);
  });
  return true;
}

/** The host's approval rows with a signature on each new approval and new revocation (written back to the copy). */
function signed(
  local: Store,
  rows: readonly ApprovalRow[],
  since: RegistrySnapshot,
  signer: SigningKey | null,
): ApprovalRow[] {
  return rows.map((row) => {
    const isNew = !since.approvals.has(row.id);
    const newlyRevoked = !isNew && since.approvals.get(row.id) === null && row.revokedAt !== null;
    let out = row;
    if (isNew && row.signature === null) {
      if (signer === null) {
        throw new UnsignedApprovalError(
          `Approvals in a fleet are signed, and this home has no operator key: run ` +
            `tether key create (then tether key trust <its key> on every host; ` +
            `docs/fleet.md#operator-keys). '${row.extension}' was approved on this host only`,
        );
      }
      out = { ...out, signature: signApproval(signer, row) };
    }
    if (newlyRevoked && row.revocationSignature === null && signer !== null)
      out = { ...out, revocationSignature: signRevocation(signer, row, row) };
    if (out !== row)
      local.orm
        .update(lite.approvals)
        .set({ signature: out.signature, revocationSignature: out.revocationSignature })
        .where(eq(lite.approvals.id, row.id))
        .run();
    return out;
  });
}

/** The contents a record names: its source files and the manifest's text. */
function recordedHashes(sources: string, manifestHash: string): string[] {
  const entries = JSON.parse(sources) as Array<{ sha256: string }>;
  return [...new Set([...entries.map((e) => e.sha256), manifestHash])];
}

function snapshotOf(
  version: number,
  installs: readonly InstallRow[],
  approvals: readonly ApprovalRow[],
  overrides: ReadonlyMap<number, null> = new Map(),
): RegistrySnapshot {
  return {
    version,
    installs: new Map(installs.map((r) => [r.name, installKey(r)])),
    approvals: new Map(approvals.map((r) => [r.id, overrides.has(r.id) ? null : r.revokedAt])),
  };
}

type Raw = Record<string, unknown>;
const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function installOf(r: Raw): InstallRow {
  return {
    name: String(r.name),
    version: String(r.version),
    description: String(r.description),
    manifestText: String(r.manifest_text),
    manifestHash: String(r.manifest_hash),
    artifactPath: String(r.artifact_path),
    artifactHash: String(r.artifact_hash),
    sourceDir: String(r.source_dir),
    installedAt: num(r.installed_at),
    updatedAt: num(r.updated_at),
  };
}

function approvalOf(r: Raw): ApprovalRow {
  return {
    id: num(r.id),
    extension: String(r.extension),
    manifestHash: String(r.manifest_hash),
    artifactHash: String(r.artifact_hash),
    grants: String(r.grants),
    approvedBy: String(r.approved_by),
    approvedAt: num(r.approved_at),
    revokedAt: numOrNull(r.revoked_at),
    revokedBy: r.revoked_by === null || r.revoked_by === undefined ? null : String(r.revoked_by),
    withheldNet: String(r.withheld_net),
    signature: r.signature === null || r.signature === undefined ? null : String(r.signature),
    revocationSignature:
      r.revocation_signature === null || r.revocation_signature === undefined ? null : String(r.revocation_signature),
  };
}

/**
 * Signs again with `signer` every approval in force that a key in `keys`
 * signed (a key rotation: hosts may then stop trusting the old key). Returns
 * how many it signed; tells every broker with NOTIFY when any.
 */
export async function resignApprovals(
  fleet: PgStore,
  keys: readonly TrustedKey[],
  signer: SigningKey,
): Promise<number> {
  const { approvalSigner } = await import("../../fleet-trust/signed-approvals.js");
  return fleet.orm.transaction(async (tx) => {
    const rows = (
      await tx.execute(sql`SELECT * FROM approvals WHERE revoked_at IS NULL ORDER BY id FOR UPDATE`)
    ).rows.map((r) => approvalOf(r as Raw));
    let signedCount = 0;
    for (const row of rows) {
      if (approvalSigner(keys, row, row.signature) === null) continue;
      await tx
        .update(fleetSchema.approvals)
        .set({ signature: signApproval(signer, row) })
        .where(eq(fleetSchema.approvals.id, row.id));
      signedCount++;
    }
    if (signedCount > 0) {
      await tx.execute(sql`INSERT INTO fleet_versions (name, version) VALUES (${REGISTRY_VERSION}, 1) ${BUMP_VERSION}`);
      await tx.execute(sql`SELECT pg_notify(${REGISTRY_CHANNEL}, '')`);
    }
    return signedCount;
  });
}
