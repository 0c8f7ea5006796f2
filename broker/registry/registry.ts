/**
 * Installs and approvals: what is installed, what an operator approved, and
 * the status that follows (pending / approved / revoked / changed).
 */
import { createHash } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import { Ajv } from "ajv";
import { and, desc, eq, isNull } from "drizzle-orm";
import { BrokerCode, TetherError } from "../base/errors.js";
import { bundleExtension } from "../install/bundle.js";
import { parseManifest, type Manifest } from "../install/manifest.js";
import { parseRule, RuleError } from "../egress/rules.js";
import type { Store } from "../store/open.js";
import { approvals, installs } from "../store/schema.js";
import { parseGrants, requestedGrants, type Grants } from "./grants.js";

export type InstallStatus = "pending" | "approved" | "revoked" | "changed";

export interface Installed {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly manifest: Manifest;
  readonly manifestText: string;
  readonly manifestHash: string;
  readonly artifactPath: string;
  readonly artifactHash: string;
  readonly sourceDir: string;
  readonly installedAt: number;
}

export interface Approval {
  readonly id: number;
  readonly manifestHash: string;
  readonly artifactHash: string;
  readonly grants: Grants;
  readonly approvedBy: string;
  readonly approvedAt: number;
  readonly revokedAt: number | null;
}

export const sha256 = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

/** Checks that each tool's `parameters` compiles as JSON Schema (with `ajv`, default a fresh one). */
export function checkToolSchemas(manifest: Manifest, file: string, ajv: Ajv = new Ajv({ allErrors: true, strict: false })): void {
  for (const [i, tool] of manifest.tool.entries()) {
    try {
      ajv.compile(tool.parameters);
    } catch (err) {
      throw new TetherError(BrokerCode.installFailed, `${file}: tool.${i}.parameters (tool '${tool.name}') is not a valid JSON Schema: ${(err as Error).message}`);
    }
  }
}

/** Checks each `[net] allow` rule parses and is not too broad to mean anything. */
export function checkNetRules(manifest: Manifest, file: string): void {
  for (const [i, rule] of manifest.net.allow.entries()) {
    try {
      parseRule(rule);
    } catch (err) {
      if (err instanceof RuleError) throw new TetherError(BrokerCode.installFailed, `${file}: net.allow.${i}: ${err.message}`);
      throw err;
    }
  }
}

export type Progress = (line: string) => void;

export class Registry {
  readonly #store: Store;
  readonly #artifacts: string;
  /** Bumped by every change this process makes (other processes show in PRAGMA data_version). */
  version = 0;

  /** Who approvals are recorded as approved by, when `approve` is not told. */
  readonly #operator: string;
  /** Compiles tool schemas at install (a broker's own: what it compiled goes with it). */
  readonly #ajv = new Ajv({ allErrors: true, strict: false });
  /** Parsed manifests by hash: a manifest text never changes under its hash. */
  readonly #manifests = new Map<string, Manifest>();

  /** `options.operator`: the approver's name recorded by default (default: this OS user's name, else "operator"). */
  constructor(store: Store, artifactsDir: string, options: { operator?: string } = {}) {
    this.#store = store;
    this.#artifacts = artifactsDir;
    this.#operator = options.operator ?? defaultOperator();
  }

  /** Validates, bundles and stores an extension folder. The result is pending until approved. */
  async install(dir: string, progress: Progress = () => {}): Promise<{ installed: Installed; status: InstallStatus }> {
    const source = resolve(dir);
    const file = join(source, "manifest.toml");
    progress(`reading ${file}`);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      throw new TetherError(BrokerCode.installFailed, `${file}: cannot read the manifest (is ${source} an extension folder?)`);
    }
    const manifest = parseManifest(text, file);
    checkToolSchemas(manifest, file, this.#ajv);
    checkNetRules(manifest, file);
    progress(`bundling ${manifest.name}@${manifest.version} (${manifest.entry})`);
    const artifact = await bundleExtension(source, manifest);
    const artifactPath = join(this.#artifacts, `${manifest.name}-${artifact.sha256.slice(0, 16)}.js`);
    // Write then rename: a crash never leaves a half-written artifact under its final name.
    writeFileSync(`${artifactPath}.tmp`, artifact.code, { mode: 0o600 });
    renameSync(`${artifactPath}.tmp`, artifactPath);
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
    this.#store.orm
      .insert(installs)
      .values(row)
      .onConflictDoUpdate({ target: installs.name, set: row })
      .run();
    this.version++;
    progress(`stored ${manifest.name} (${(artifact.code.length / 1024).toFixed(0)} KiB artifact)`);
    const installed = this.get(manifest.name)!;
    return { installed, status: this.status(installed) };
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
    if (found === null) throw new TetherError(BrokerCode.notInstalled, `Extension '${name}' is not installed. Run: tether install <folder>`);
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
    const row = this.#store.orm.select().from(approvals).where(eq(approvals.extension, name)).orderBy(desc(approvals.id)).limit(1).get();
    if (row === undefined) return null;
    return { ...row, grants: parseGrants(row.grants) };
  }

  /** Every approval of `name`, newest first, revoked ones included. */
  approvalHistory(name: string): Approval[] {
    return this.#store.orm
      .select()
      .from(approvals)
      .where(eq(approvals.extension, name))
      .orderBy(desc(approvals.id))
      .all()
      .map((row) => ({ ...row, grants: parseGrants(row.grants) }));
  }

  status(installed: Installed): InstallStatus {
    const approval = this.latestApproval(installed.name);
    if (approval === null) return "pending";
    // Revoked — unless the install came after the revocation (uninstall, then install again).
    if (approval.revokedAt !== null) return installed.installedAt > approval.revokedAt ? "pending" : "revoked";
    if (approval.manifestHash !== installed.manifestHash || approval.artifactHash !== installed.artifactHash) return "changed";
    return "approved";
  }

  /**
   * Approves what is installed now. `onlyNet` narrows the egress rules to a
   * subset of those requested; anything outside the request is an error.
   */
  approve(name: string, options: { onlyNet?: readonly string[]; by?: string } = {}): Approval {
    const installed = this.require(name);
    const grants = requestedGrants(installed.manifest);
    if (options.onlyNet !== undefined) {
      const extra = options.onlyNet.filter((rule) => !grants.net.includes(rule));
      if (extra.length > 0) {
        throw new TetherError(BrokerCode.approvalInvalid, `--only ${extra.join(", ")}: not requested by '${name}' (it requests: ${grants.net.join(", ") || "no network"})`);
      }
      grants.net = [...options.onlyNet];
    }
    const orm = this.#store.orm;
    orm.transaction((tx) => {
      tx.update(approvals).set({ revokedAt: Date.now() }).where(and(eq(approvals.extension, name), isNull(approvals.revokedAt))).run();
      tx.insert(approvals)
        .values({ extension: name, manifestHash: installed.manifestHash, artifactHash: installed.artifactHash, grants: JSON.stringify(grants), approvedBy: options.by ?? this.#operator })
        .run();
    });
    this.version++;
    return this.latestApproval(name)!;
  }

  /** Revokes the current approval; true when there was one to revoke. */
  revoke(name: string): boolean {
    this.require(name);
    const changed = this.#store.orm.update(approvals).set({ revokedAt: Date.now() }).where(and(eq(approvals.extension, name), isNull(approvals.revokedAt))).run();
    this.version++;
    return changed.changes > 0;
  }

  /** Removes the install (approvals stay in the history; a reinstall needs a new approval). */
  uninstall(name: string): void {
    this.require(name);
    this.revoke(name);
    this.#store.orm.delete(installs).where(eq(installs.name, name)).run();
    this.version++;
  }

  #parsedManifest(text: string, hash: string, name: string): Manifest {
    let manifest = this.#manifests.get(hash);
    if (manifest === undefined) {
      manifest = parseManifest(text, `${name} (installed manifest)`);
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
