/**
 * What the registry records of an install and of an approval. Their own module so
 * that the registry's helpers (migrations.ts) can name them without importing
 * registry.ts, which imports those helpers.
 */
import type { Manifest } from "../install/manifest.js";
import type { Grants } from "./grants.js";

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
  /**
   * Who revoked it, or who approved the approval that replaced it (null: in force, or revoked
   * before this was recorded).
   */
  readonly revokedBy: string | null;
  /**
   * Requested egress rules this approval left out (`--only`), kept out by the next approval unless
   * it is told `all`.
   */
  readonly withheldNet: readonly string[];
}
