/**
 * Which of the fleet's approval rows a host accepts (docs/fleet.md#the-trust-model).
 * Widening needs an operator's signature; narrowing never does:
 *
 * - an approval is kept only when a key this host trusts signed exactly its
 *   facts (a row inserted or altered by a database writer is refused);
 * - of one extension's kept approvals only the newest by its signed time may be
 *   in force (an old approval moved to a higher id stays replaced);
 * - a revocation is honoured signed or not, and one this host knows (it saw
 *   it, or made it and has not published it yet) is never undone by a pull;
 * - an approval this host accepted whose row is gone from the fleet (deleted
 *   or altered) is held here revoked until the row is back as it was signed.
 */
import type { TrustedKey } from "./operator-keys.js";
import { approvalIdentity, approvalSigner, revocationSigner, type ApprovalFacts } from "./signed-approvals.js";

export interface JudgedRow extends ApprovalFacts {
  readonly id: number;
  readonly revokedAt: number | null;
  readonly revokedBy: string | null;
  readonly signature: string | null;
  readonly revocationSignature: string | null;
}

/** A row refused here, and why in words an operator can act on. */
export interface Refusal {
  readonly extension: string;
  readonly id: number;
  /** Identifies the row across pulls: its signature, or its id when unsigned. */
  readonly key: string;
  readonly why: string;
}

export interface Judgement<R extends JudgedRow> {
  /** The rows this host's copy holds: accepted ones, with the revocations it knows. */
  readonly rows: R[];
  readonly refused: Refusal[];
  /** Revocations this host knows that the fleet's rows lack: to publish again. */
  readonly unpublished: R[];
}

function whyRefused(keys: readonly TrustedKey[], signature: string | null): string {
  if (signature === null) return "it carries no operator's signature";
  if (keys.length === 0) return "this host trusts no operator key (tether key trust <key>)";
  const id = signature.slice(0, signature.indexOf(":"));
  if (!keys.some((k) => k.id === id)) return `it is signed by key ${id.slice(0, 16)}, which this host does not trust`;
  return "its signature does not match its contents (altered after it was signed)";
}

/** Who revoked an approval this host held whose row left the fleet's store (it comes back in force if the row does). */
export const GONE_FROM_FLEET = "no one: its row is gone from the fleet's store";

export function judgeApprovals<R extends JudgedRow>(
  fleetRows: readonly R[],
  keys: readonly TrustedKey[],
  local: readonly R[],
): Judgement<R> {
  const refused: Refusal[] = [];
  const unpublished: R[] = [];
  // What this host already accepted, by the facts signed (not the signature's spelling, not the id).
  const known = new Map<string, R>();
  for (const row of local) if (approvalSigner(keys, row, row.signature) !== null) known.set(approvalIdentity(row), row);
  const kept: R[] = [];
  const inFleet = new Set<string>();
  for (const row of fleetRows) {
    if (approvalSigner(keys, row, row.signature) === null) {
      refused.push({
        extension: row.extension,
        id: row.id,
        key: row.signature ?? `#${row.id}`,
        why: whyRefused(keys, row.signature),
      });
      continue;
    }
    const identity = approvalIdentity(row);
    if (inFleet.has(identity)) continue; // the same approval twice: the first row stands
    inFleet.add(identity);
    const seen = known.get(identity);
    if (row.revokedAt === null && seen !== undefined && seen.revokedAt !== null && seen.revokedBy !== GONE_FROM_FLEET) {
      // Revoked here (seen, or made and not yet published): the fleet's row does not undo it.
      kept.push({
        ...row,
        revokedAt: seen.revokedAt,
        revokedBy: seen.revokedBy,
        revocationSignature: seen.revocationSignature,
      });
      unpublished.push(seen);
    } else kept.push(row);
  }
  // An approval this host accepted that is gone from the fleet (no broker deletes or alters one) stays in its
  // copy, revoked: deleting a newer approval or a revocation brings no older state back, and an altered row
  // leaves the extension unserved here rather than served as it was.
  const ids = new Set(kept.map((r) => r.id));
  for (const [identity, row] of known) {
    if (inFleet.has(identity)) continue;
    const gone =
      row.revokedAt !== null
        ? row
        : { ...row, revokedAt: Date.now(), revokedBy: GONE_FROM_FLEET, revocationSignature: null };
    kept.push(ids.has(gone.id) ? { ...gone, id: -gone.id } : gone);
  }
  // The newest signed approval of each extension replaces every older one, whatever the ids say.
  const newest = new Map<string, R>();
  for (const row of kept) {
    const best = newest.get(row.extension);
    if (
      best === undefined ||
      row.approvedAt > best.approvedAt ||
      (row.approvedAt === best.approvedAt && row.id > best.id)
    )
      newest.set(row.extension, row);
  }
  const rows = kept.map((row) => {
    const best = newest.get(row.extension)!;
    if (row === best || row.revokedAt !== null) return row;
    return { ...row, revokedAt: best.approvedAt, revokedBy: best.approvedBy, revocationSignature: null };
  });
  return { rows, refused, unpublished };
}

/** Whether a row's revocation is an operator's signed one (else it was replaced, or revoked unsigned). */
export const signedRevocation = (keys: readonly TrustedKey[], row: JudgedRow): boolean =>
  revocationSigner(keys, row, { revokedAt: row.revokedAt, revokedBy: row.revokedBy }, row.revocationSignature) !== null;
