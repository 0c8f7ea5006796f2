/**
 * Approving an extension, after the operator confirmed it (`tether approve`,
 * the console's approve): `only` narrows the egress rules, `all` grants what
 * an earlier `only` withheld, the approval is recorded as made by `by`
 * (default: the registry's operator name), and an `[init]` runs right after.
 * Every delivery layer calls this one function, so a page and the command
 * leave the same rows.
 */
import { BrokerCode, TetherError } from "../base/errors.js";
import type { SessionFleet } from "../broker-options.js";
import { signingKey } from "../fleet-trust/operator-keys.js";
import { initLine } from "../init/init-lines.js";
import type { InitReport } from "../init/initializers.js";
import type { Approval, Installed, Progress, Registry } from "../registry/registry.js";

/** What approving reads and changes: the registry, the home (its operator key), and runs the initializer. */
export interface ApproveHost {
  readonly registry: Registry;
  readonly home: string;
  /** Its fleet, when it is a host of one: an approval is then signed when it is published. */
  readonly fleet: SessionFleet | null;
  initialize(name: string, reason: "approved"): Promise<InitReport>;
}

export interface ApproveRequest {
  /**
   * The requested egress rules to grant (`--only`); absent: every rule
   * requested, less what an earlier --only withheld (unless `all`).
   */
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

export async function approveExtension(
  host: ApproveHost,
  name: string,
  request: ApproveRequest = {},
): Promise<Approved> {
  if (request.all === true && request.only !== undefined) {
    throw new TetherError(
      BrokerCode.approvalInvalid,
      "--only and --all do not combine: --only grants the rules named, --all every rule requested",
    );
  }
  // A fleet's approval is signed when it is published: checked before anything is recorded.
  if (host.fleet !== null) signingKeyOrThrow(host.home);
  const registry = host.registry;
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
  const egress = approval.grants.net.length
    ? `(egress: ${approval.grants.net.join(", ")}${kept})`
    : `(no egress${kept})`;
  const approved = `approved ${name} ${installed.version} ${egress}`;
  // With [init]: its initializer runs now; a failure leaves the approval standing.
  const init = installed.manifest.init === undefined ? undefined : await host.initialize(name, "approved");
  return {
    name,
    installed,
    approval,
    ...(init !== undefined ? { init } : {}),
    text: init === undefined ? approved : `${approved}\n${initLine(name, init)}`,
  };
}

/** This home's operator key, or the error that says how to make one. */
function signingKeyOrThrow(home: string): void {
  if (signingKey(home) === null) {
    throw new TetherError(
      BrokerCode.approvalInvalid,
      "Approvals in a fleet are signed by an operator key, and this home has none: run tether " +
        "key create, then tether key trust <its key> on every host (docs/fleet.md#operator-keys)",
    );
  }
}
