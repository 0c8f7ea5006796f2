/**
 * What an operator's signature covers (docs/fleet.md#the-trust-model): an
 * approval — extension, the manifest and artifact it pins, the grants, what
 * it withheld, who approved and when — and a revocation of one approval. The
 * bytes signed are a fixed-order JSON array, so every host rebuilds them
 * exactly from the row; an approval's id is not in them (each store numbers
 * its own), its time is, which is what orders approvals of one extension.
 */
import { createHash } from "node:crypto";
import { verifiedBy, type SigningKey, type TrustedKey } from "./operator-keys.js";

/** The fields of an approval row the signature covers. */
export interface ApprovalFacts {
  readonly extension: string;
  readonly manifestHash: string;
  readonly artifactHash: string;
  readonly grants: string;
  readonly withheldNet: string;
  readonly approvedBy: string;
  readonly approvedAt: number;
}

export interface RevocationFacts {
  readonly revokedAt: number | null;
  readonly revokedBy: string | null;
}

const approvalBytes = (a: ApprovalFacts): Buffer =>
  Buffer.from(
    JSON.stringify([
      "tether-approval-v1",
      a.extension,
      a.manifestHash,
      a.artifactHash,
      a.grants,
      a.withheldNet,
      a.approvedBy,
      a.approvedAt,
    ]),
    "utf8",
  );

const revocationBytes = (a: ApprovalFacts, r: RevocationFacts): Buffer =>
  Buffer.from(
    JSON.stringify([
      "tether-revocation-v1",
      a.extension,
      a.manifestHash,
      a.artifactHash,
      a.approvedAt,
      r.revokedAt,
      r.revokedBy,
    ]),
    "utf8",
  );

/** What identifies an approval across stores and spellings: the hash of the facts its signature covers. */
export const approvalIdentity = (a: ApprovalFacts): string =>
  createHash("sha256").update(approvalBytes(a)).digest("hex");

export const signApproval = (key: SigningKey, a: ApprovalFacts): string => key.sign(approvalBytes(a));
export const signRevocation = (key: SigningKey, a: ApprovalFacts, r: RevocationFacts): string =>
  key.sign(revocationBytes(a, r));

/** The trusted key that signed this approval, or null (unsigned, forged, altered, or an untrusted key). */
export const approvalSigner = (
  keys: readonly TrustedKey[],
  a: ApprovalFacts,
  signature: string | null,
): TrustedKey | null => verifiedBy(keys, approvalBytes(a), signature);

/** The trusted key that signed this revocation, or null. */
export const revocationSigner = (
  keys: readonly TrustedKey[],
  a: ApprovalFacts,
  r: RevocationFacts,
  signature: string | null,
): TrustedKey | null => (r.revokedAt === null ? null : verifiedBy(keys, revocationBytes(a, r), signature));
