/**
 * Installs and approvals: what is installed, what an operator approved, and
 * the status that follows (pending / approved / revoked / changed).
 */
import { createHash } from "node:crypto";
import { realpathSync, renameSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Ajv } from "ajv";
import { ajvClass, preloadAjv } from "../base/ajv.js";
import { and, desc, eq, isNull } from "drizzle-orm";
import { BrokerCode, TetherError } from "../base/errors.js";
import { bundleExtension, type Artifact } from "../install/bundle.js";
import type { HostJobSetup } from "../jail/host-job.js";
import { appliedCount } from "../store/applied-count.js";
import type { KindSections } from "../install/kind-section.js";
import { parseManifest, readManifestFile, type Manifest } from "../install/manifest.js";
import { manifestProblems } from "../install/manifest-checks.js";
import type { Store } from "../store/open.js";
import { touchChangeStamp } from "../store/change-stamp.js";
import { approvals, installs } from "../store/schema.js";
import { collectUnreferenced, type Collected } from "./artifact-gc.js";
import { applyPending, migrationPlan, recordApplied, type MigrationPlan } from "./migrations.js";
import { artifactRecord, recordArtifact, sourceContent, type ArtifactRecord } from "./artifact-records.js";
import { parseGrants, requestedGrants } from "./grants.js";
import type { Approval, Installed, InstallStatus } from "./installed.js";

// The records the registry hands out live in installed.ts (migrations.ts needs them and
// must not import this file, which imports it); re-exported for the many who read them here.
export type { Approval, Installed, InstallStatus } from "./installed.js";

export const sha256 = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

export type Progress = (line: string) => void;

export interface InstallOptions {
  /**
   * Asked when the name is installed from another folder, before anything is
   * bundled; false refuses the install (InstallDeclined). Absent: it replaces.
   */
  readonly replaceFrom?: (installed: Installed, source: string) => Promise<boolean>;
  /** Runs on the bundled artifact before anything is stored (the dry boot); a throw refuses the install. */
  readonly verify?: (artifact: Artifact, manifest: Manifest, source: string) => Promise<void>;
}

/** The install was not confirmed (a different folder under an installed name): nothing was stored. */
export class InstallDeclined extends Error {}

/** Whether two folder paths are the same folder (by real path when both exist). */
function sameFolder(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(a) === real(b);
}

export class Registry {
  readonly #store: Store;
  readonly #artifacts: string;
  /** The home the artifacts folder is in (extensions' databases are under its data/). */
  readonly #home: string;
  /** Bumped by every change this process makes (other processes show in PRAGMA data_version). */
  #version = 0;
  /** Told after every change written through this registry, or applied to its store from the fleet. */
  readonly #listeners = new Set<() => void>();

  /** Who approvals are recorded as approved by, when `approve` is not told. */
  readonly #operator: string;
  /** Compiles tool schemas at install (a broker's own: what it compiled goes with it); made at the first install. */
  #ajv: Ajv | null = null;
  /** Parsed manifests by hash: a manifest text never changes under its hash. */
  readonly #manifests = new Map<string, Manifest>();

  /** How bundling and migrations are jailed (the broker's jail setup). */
  readonly #jobs: HostJobSetup;
  /** The sections of the kinds added beside the built-ins a manifest may hold. */
  readonly #sections: KindSections;

  /**
   * `options.operator`: the approver's name recorded by default (default: this OS user's name, else
   * "operator"); `options.jobs`: the host-side jails; `options.sections`: the added kinds' manifest
   * sections.
   */
  constructor(
    store: Store,
    artifactsDir: string,
    options: { operator?: string; jobs?: HostJobSetup; sections?: KindSections } = {},
  ) {
    this.#jobs = options.jobs ?? {};
    this.#sections = options.sections ?? new Map();
    this.#store = store;
    this.#artifacts = artifactsDir;
    this.#home = dirname(artifactsDir);
    this.#operator = options.operator ?? defaultOperator();
  }

  /** Validates, bundles and stores an extension folder. The result is pending until approved. */
  async install(
    dir: string,
    progress: Progress = () => {},
    options: InstallOptions = {},
  ): Promise<{ installed: Installed; status: InstallStatus; collected: Collected }> {
    const source = resolve(dir);
    const file = join(source, "manifest.toml");
    progress(`reading ${file}`);
    const text = readManifestFile(file);
    const manifest = parseManifest(text, file, this.#sections);
    // Through import() (from the command, its bundled chunk), not required file by file.
    await preloadAjv();
    const problems = manifestProblems(
      manifest,
      file,
      (this.#ajv ??= new (ajvClass())({ allErrors: true, strict: false })),
    );
    if (problems.length > 0) throw new TetherError(BrokerCode.installFailed, problems.join("; "));
    const previous = this.get(manifest.name);
    if (
      previous !== null &&
      !sameFolder(previous.sourceDir, source) &&
      options.replaceFrom !== undefined &&
      !(await options.replaceFrom(previous, source))
    ) {
      throw new InstallDeclined(`${manifest.name} is installed from ${previous.sourceDir}, not ${source}`);
    }
    progress(`bundling ${manifest.name}@${manifest.version} (${manifest.entry})`);
    const artifact = await bundleExtension(source, manifest, this.#jobs);
    await options.verify?.(artifact, manifest, source);
    const artifactPath = join(this.#artifacts, `${manifest.name}-${artifact.sha256.slice(0, 16)}.js`);
    const row = {
      name: manifest.name,
      version: manifest.version,
      description: manifest.description,
      manifestText: text,
      manifestHash: sha256(text),
      artifactPath,
      artifactHash: artifact.sha256,
      sourceDir: source,
      updatedAt: Date.now(),
    };
    // One immediate transaction, as the collection of unreferenced artifacts takes: it never sees this file unrecorded.
    this.#store.orm.transaction(
      (tx) => {
        // Write then rename: a crash never leaves a half-written artifact under its final name.
        writeFileSync(`${artifactPath}.tmp`, artifact.code, { mode: 0o600 });
        renameSync(`${artifactPath}.tmp`, artifactPath);
        tx.insert(installs).values(row).onConflictDoUpdate({ target: installs.name, set: row }).run();
        recordArtifact(
          tx,
          manifest.name,
          { sha256: artifact.sha256, bytes: Buffer.byteLength(artifact.code), sources: artifact.sources },
          source,
          Buffer.from(text),
        );
      },
      { behavior: "immediate" },
    );
    this.#changed();
    progress(`stored ${manifest.name} (${(artifact.code.length / 1024).toFixed(0)} KiB artifact)`);
    // The artifact it replaced, if any, is now unreferenced.
    const collected = this.collectUnreferenced();
    const installed = this.get(manifest.name)!;
    return { installed, status: this.status(installed), collected };
  }

  /** Removes artifacts, Deno caches and source records nothing refers to any more (see artifact-gc.ts). */
  collectUnreferenced(): Collected {
    return collectUnreferenced(this.#store, this.#artifacts, join(dirname(this.#artifacts), "cache", "deno"));
  }

  get(name: string): Installed | null {
    const row = this.#store.orm.select().from(installs).where(eq(installs.name, name)).get();
    if (row === undefined) return null;
    return {
      name: row.name,
      version: row.version,
      description: row.description,
      manifest: this.#parsedManifest(row.manifestText, row.manifestHash, name),
      manifestText: row.manifestText,
      manifestHash: row.manifestHash,
      artifactPath: row.artifactPath,
      artifactHash: row.artifactHash,
      sourceDir: row.sourceDir,
      installedAt: row.installedAt,
    };
  }

  /** The installed extension, or an error that says what to run. */
  require(name: string): Installed {
    const found = this.get(name);
    if (found === null)
      throw new TetherError(
        BrokerCode.notInstalled,
        `Extension '${name}' is not installed. Run: tether install <folder>`,
      );
    return found;
  }

  list(): Installed[] {
    return this.#store.orm
      .select({ name: installs.name })
      .from(installs)
      .orderBy(installs.name)
      .all()
      .map((r) => this.get(r.name)!);
  }

  /** The newest approval of `name`, revoked or not. */
  latestApproval(name: string): Approval | null {
    const row = this.#store.orm
      .select()
      .from(approvals)
      .where(eq(approvals.extension, name))
      .orderBy(desc(approvals.id))
      .limit(1)
      .get();
    return row === undefined ? null : approvalOf(row);
  }

  /** Every approval of `name`, newest first, revoked ones included. */
  approvalHistory(name: string): Approval[] {
    return this.#store.orm
      .select()
      .from(approvals)
      .where(eq(approvals.extension, name))
      .orderBy(desc(approvals.id))
      .all()
      .map(approvalOf);
  }

  status(installed: Installed): InstallStatus {
    const approval = this.latestApproval(installed.name);
    if (approval === null) return "pending";
    // Revoked — unless the install came after the revocation (uninstall, then install again).
    if (approval.revokedAt !== null) return installed.installedAt > approval.revokedAt ? "pending" : "revoked";
    if (approval.manifestHash !== installed.manifestHash || approval.artifactHash !== installed.artifactHash)
      return "changed";
    return "approved";
  }

  /**
   * Approves what is installed now. `onlyNet` narrows the egress rules to a
   * subset of those requested; anything outside the request is an error.
   * Without it, rules an earlier `--only` left out stay out, unless `all`.
   */
  approve(
    name: string,
    options: { onlyNet?: readonly string[]; all?: boolean; by?: string; progress?: Progress } = {},
  ): Approval {
    const installed = this.require(name);
    const grants = requestedGrants(installed.manifest);
    const requested = grants.net;
    if (options.onlyNet !== undefined) {
      const extra = options.onlyNet.filter((rule) => !requested.includes(rule));
      if (extra.length > 0) {
        throw new TetherError(
          BrokerCode.approvalInvalid,
          `--only ${extra.join(", ")}: not requested by '${name}' (it ` +
            `requests: ${requested.join(", ") || "no network"})`,
        );
      }
      grants.net = [...options.onlyNet];
    } else if (options.all !== true) {
      const withheld = this.withheldOnApproval(name, installed);
      grants.net = requested.filter((rule) => !withheld.includes(rule));
    }
    const withheldNet = requested.filter((rule) => !grants.net.includes(rule));
    const by = options.by ?? this.#operator;
    const orm = this.#store.orm;
    // Its database first: a failed migration throws here, before anything is recorded.
    const migrated =
      grants.storage === null
        ? []
        : applyPending(
            orm,
            this.#home,
            installed,
            grants.storage.max_bytes,
            options.progress ?? (() => {}),
            this.#jobs,
          );
    orm.transaction((tx) => {
      recordApplied(tx, migrated);
      tx.update(approvals)
        .set({ revokedAt: Date.now(), revokedBy: by })
        .where(and(eq(approvals.extension, name), isNull(approvals.revokedAt)))
        .run();
      tx.insert(approvals)
        .values({
          extension: name,
          manifestHash: installed.manifestHash,
          artifactHash: installed.artifactHash,
          grants: JSON.stringify(grants),
          approvedBy: by,
          withheldNet: JSON.stringify(withheldNet),
        })
        .run();
    });
    this.#changed();
    // The artifact the replaced approval pinned may no longer be named by anything.
    this.collectUnreferenced();
    return this.latestApproval(name)!;
  }

  /**
   * The requested rules the latest approval left out, which a new approval keeps
   * out unless told `all`: those it recorded as withheld, and (an approval made
   * before they were recorded, of this same manifest) those it did not grant.
   */
  withheldOnApproval(name: string, installed: Installed = this.require(name)): string[] {
    const requested = installed.manifest.net.allow;
    const previous = this.latestApproval(name);
    if (previous === null) return [];
    const ungranted =
      previous.manifestHash === installed.manifestHash
        ? requested.filter((rule) => !previous.grants.net.includes(rule))
        : [];
    return requested.filter((rule) => previous.withheldNet.includes(rule) || ungranted.includes(rule));
  }

  /** Who approvals and revocations are recorded as made by when not told (the CLI's and the console's default). */
  /** Counts the changes this process made (its own commits do not move the store's data_version). */
  get version(): number {
    return this.#version;
  }

  /** Calls `listener` after every change this registry writes or is told of; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Rows were written to this store's registry tables by another part of this process (the fleet's pull). */
  noteApplied(): void {
    this.#changed();
  }

  #changed(): void {
    this.#version++;
    // Other processes on this store hear of it (their kernels watch the stamp).
    touchChangeStamp(this.#store);
    for (const listener of [...this.#listeners]) listener();
  }

  get operator(): string {
    return this.#operator;
  }

  /**
   * Revokes the current approval, recorded as revoked by `by` (default: the operator's name); true
   * when there was one to revoke.
   */
  revoke(name: string, options: { by?: string } = {}): boolean {
    this.require(name);
    const changed = this.#store.orm
      .update(approvals)
      .set({ revokedAt: Date.now(), revokedBy: options.by ?? this.#operator })
      .where(and(eq(approvals.extension, name), isNull(approvals.revokedAt)))
      .run();
    this.#changed();
    return changed.changes > 0;
  }

  /** Removes the install (approvals stay in the history, revoked by `by`; a reinstall needs a new approval). */
  uninstall(name: string, options: { by?: string } = {}): void {
    this.require(name);
    this.revoke(name, options);
    this.#store.orm.delete(installs).where(eq(installs.name, name)).run();
    this.#changed();
    this.collectUnreferenced();
  }

  /**
   * Applies to this home's database of `installed` the migrations its approval
   * made elsewhere (a fleet's other host) and records them; false when none
   * was pending. Throws when one fails (nothing of it is recorded).
   */
  applyApprovedMigrations(installed: Installed, maxBytes: number, progress: Progress): boolean {
    if (this.migrationPlan(installed).migrations.every((m) => m.applied !== null)) return false;
    const applied = applyPending(this.#store.orm, this.#home, installed, maxBytes, progress, this.#jobs);
    this.#store.orm.transaction((tx) => recordApplied(tx, applied));
    return true;
  }

  /** Its migrations, what its database has, and what would stop approving it. */
  migrationPlan(installed: Installed): MigrationPlan {
    return migrationPlan(this.#store.orm, this.#home, installed, this.#jobs);
  }

  /** The number of the last migration `name`'s database has (0: none yet). */
  appliedCount(name: string): number {
    return appliedCount(this.#home, name, this.#jobs);
  }

  /** What `name`'s artifact `artifactHash` was built from; null when it was not recorded (or is no longer named). */
  artifactRecord(name: string, artifactHash: string): ArtifactRecord | null {
    return artifactRecord(this.#store.orm, name, artifactHash);
  }

  /** A recorded source file's contents, when kept. */
  sourceContent(sha256: string): Buffer | null {
    return sourceContent(this.#store.orm, sha256);
  }

  #parsedManifest(text: string, hash: string, name: string): Manifest {
    let manifest = this.#manifests.get(hash);
    if (manifest === undefined) {
      manifest = parseManifest(text, `${name} (installed manifest)`, this.#sections);
      this.#manifests.set(hash, manifest);
    }
    return manifest;
  }
}

/** This OS user's name (from the user database, not the environment), else "operator". */
function defaultOperator(): string {
  try {
    return userInfo().username || "operator";
  } catch {
    return "operator";
  }
}

/** An approvals row as the registry hands it out: its grants and withheld rules parsed. */
function approvalOf(row: typeof approvals.$inferSelect): Approval {
  return { ...row, grants: parseGrants(row.grants), withheldNet: JSON.parse(row.withheldNet) as string[] };
}
