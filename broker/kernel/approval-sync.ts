/**
 * Whether the approval a satellite runs under is still the one in force, and
 * what the broker does when it is not: a revoked approval or a changed install
 * stops the extension's satellites (in every session); a re-approval of the same
 * artifact (perhaps narrower) keeps them running under the new grants.
 */
import { BrokerCode, TetherError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import type { Approval, Installed, Registry } from "../registry/registry.js";
import type { SessionScope } from "./session-scope.js";

/** The approval that lets `name` run now, or an error that names the command that fixes it (`Broker.approved`). */
export function approvalInForce(registry: Registry, name: string): { installed: Installed; approval: Approval } {
  const installed = registry.require(name);
  const approval = registry.latestApproval(name);
  if (approval === null) {
    throw new TetherError(
      BrokerCode.notApproved,
      `Extension '${name}' is not approved. Run: tether review ${name}, then tether approve ${name}`,
    );
  }
  if (approval.revokedAt !== null) {
    throw new TetherError(
      BrokerCode.notApproved,
      `Extension '${name}' was revoked. Run: tether review ${name}, then tether approve ${name} to allow it again`,
    );
  }
  if (approval.manifestHash !== installed.manifestHash || approval.artifactHash !== installed.artifactHash) {
    throw new TetherError(
      BrokerCode.notApproved,
      `Extension '${name}' changed since it was approved. Run: tether review ${name} to see what changed, then ` +
        `tether approve ${name}`,
    );
  }
  return { installed, approval };
}

/** The approval in force for exactly this install (manifest and artifact), or null when revoked or changed. */
export function currentApproval(registry: Registry, installed: Installed): Approval | null {
  const name = installed.manifest.name;
  const current = registry.latestApproval(name);
  const now = registry.get(name);
  const same =
    current !== null &&
    now !== null &&
    current.revokedAt === null &&
    now.manifestHash === installed.manifestHash &&
    current.manifestHash === installed.manifestHash &&
    current.artifactHash === installed.artifactHash;
  return same ? current : null;
}

/**
 * Brings every scope's live satellites in line with the approvals as they
 * stand. A stopped satellite leaves its scope at once (no next call reaches
 * it); it is killed once `rejudgeEgress` settled, so a request it has on the
 * wire ends withdrawn with the rule that no longer allows it, not merely cut.
 */
export function syncApprovals(
  registry: Registry,
  scopes: Iterable<SessionScope>,
  log: Logger,
  rejudgeEgress: () => Promise<void>,
): void {
  for (const scope of scopes) {
    for (const [name, live] of scope.live) {
      const current = currentApproval(registry, live.installed);
      if (current === null) {
        log.warn("approval revoked or the install changed; stopping the extension's satellite", { extension: name });
        scope.live.delete(name);
        // Its open call ends with the revocation's code and who made it, not as a crash.
        const latest = registry.latestApproval(name);
        const why =
          latest !== null && latest.id === live.approval.id && latest.revokedAt !== null
            ? `was stopped: its approval was revoked${latest.revokedBy !== null ? ` by ${latest.revokedBy}` : ""}`
            : "was stopped: its install or approval changed since it started";
        void rejudgeEgress()
          .catch(() => {})
          .then(() => live.slot.destroy(why, BrokerCode.notApproved));
      } else if (current.id !== live.approval.id) {
        // Re-approved for the same artifact: capability calls read the grants at dispatch anyway.
        scope.live.set(name, { ...live, approval: current });
      }
    }
  }
}
