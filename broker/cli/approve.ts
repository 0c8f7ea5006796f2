/**
 * Approving an extension as `tether approve` does it, after its confirmation:
 * `--only` narrows the egress rules, `--all` grants what an earlier `--only`
 * withheld, the approval is recorded as made by `by` (default: the registry's
 * operator name), and an `[init]` runs right after. The console's approve
 * calls this same function, so a page and the command leave the same rows.
 */
import type { Broker } from "../broker.js";
import type { InitReport } from "../init/initializers.js";
import { initLine } from "../init/init-lines.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { signingKey } from "../fleet-trust/operator-keys.js";
import type { Approval, Installed, Progress } from "../registry/registry.js";

export interface ApproveRequest {
  /** The requested egress rules to grant (`--only`); absent: every rule requested, less what an earlier --only withheld (unless `all`). */
  readonly only?: readonly string[];
  /** Grant every requested rule, also those an earlier --only withheld (`--all`). */
  readonly all?: boolean;
  /** Who approves (default: the registry's operator name). */
  readonly by?: string;
  readonly progress?: Progress;
  /** Runs once the approval is recorded, before its initializer (the console publishes it to the fleet here). */
  readonly recorded?: () => Promise<unknown>;
}

export interface Approved {
  readonly name: string;
  readonly installed: Installed;
  readonly approval: Approval;
  /** How its initializer went, for an extension with [init]. */
  readonly init?: InitReport;
  /** What `tether approve` prints. */
  readonly text: string;
}

export async function approveExtension(broker: Broker, name: string, request: ApproveRequest = {}): Promise<Approved> {
  if (request.all === true && request.only !== undefined) {
    throw new TetherError(
      BrokerCode.approvalInvalid,
      "--only and --all do not combine: --only grants the rules named, --all every rule requested",
    );
  }
  // A fleet's approval is signed when it is published: checked before anything is recorded.
  if (broker.fleet !== null) signingKeyOrThrow(broker.home);
  const registry = broker.registry;
  const installed = registry.require(name);
  const approval = registry.approve(name, {
    ...(request.only !== undefined ? { onlyNet: request.only } : {}),
    all: request.all === true,
    ...(request.by !== undefined ? { by: request.by } : {}),
    ...(request.progress !== undefined ? { progress: request.progress } : {}),
  });
  await request.recorded?.();
  const kept =
    request.only === undefined && approval.withheldNet.length > 0
      ? `; still withheld by an earlier --only: ${approval.withheldNet.join(", ")} (--all grants it)`
      : "";
  const approved = `approved ${name} ${installed.version}${approval.grants.net.length ? ` (egress: ${approval.grants.net.join(", ")}${kept})` : ` (no egress${kept})`}`;
  // With [init]: its initializer runs now; a failure leaves the approval standing.
  const init = installed.manifest.init === undefined ? undefined : await broker.initialize(name, "approved");
  return {
    name,
    installed,
    approval,
    ...(init !== undefined ? { init } : {}),
    text: init === undefined ? approved : `${approved}\n${initLine(name, init)}`,
  };
}

/** Revoking as `tether revoke` does it, recorded as revoked by `by` (default: the registry's operator name). */
export function revokeExtension(
  broker: Broker,
  name: string,
  by?: string,
): { name: string; revoked: boolean; text: string } {
  const revoked = broker.registry.revoke(name, by !== undefined ? { by } : {});
  return {
    name,
    revoked,
    text: revoked ? `revoked ${name}; running satellites stop on their next call` : `${name} had no active approval`,
  };
}

/** This home's operator key, or the error that says how to make one. */
function signingKeyOrThrow(home: string): void {
  if (signingKey(home) === null) {
    throw new TetherError(
      BrokerCode.approvalInvalid,
      "Approvals in a fleet are signed by an operator key, and this home has none: run tether key create, then tether key trust <its key> on every host (docs/fleet.md#operator-keys)",
    );
  }
}
