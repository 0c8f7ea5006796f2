/**
 * The fleet's store as the commands are given it (`--store`, or
 * `TETHER_STORE`; docs/fleet.md): this host's name in it (`TETHER_FLEET_HOST`,
 * default the machine's host name), and joining it around a command.
 */
import { hostname } from "node:os";
import type { Broker } from "../broker.js";
import type { FleetMember, FleetOptions } from "../fleet.js";
import { publishChanges } from "../operator/publish.js";
import { UsageError } from "./command.js";
import type { EnvironmentOptions } from "./environment.js";

/** The fleet to join, or null for a broker on its own; a usage error when the store is not a PostgreSQL URL. */
export function fleetOptionsOf(options: EnvironmentOptions): FleetOptions | null {
  if (options.store === undefined) return null;
  // Checked here, not by importing the store's driver: most commands never load it.
  if (!/^postgres(?:ql)?:\/\//.test(options.store))
    throw new UsageError(
      "--store takes the fleet's PostgreSQL URL: postgres://role:password@host:5432/database (docs/fleet.md)",
    );
  return {
    url: options.store,
    host: options.fleetHost ?? hostname(),
    ...(options.fleetLeaseMs !== undefined ? { leaseMs: options.fleetLeaseMs } : {}),
  };
}

/**
 * Runs a command's `fn` on `broker` as a host of the fleet: the registry is
 * pulled first, and what `fn` changed in it is published after — also when
 * `fn` failed part way, so the fleet holds what this host's copy holds.
 */
export async function inFleet<T>(broker: Broker, fleet: FleetOptions, fn: () => Promise<T>): Promise<T> {
  const { FleetMember } = await import("../fleet.js");
  let member: FleetMember;
  try {
    member = await FleetMember.join(broker, { ...fleet, listen: false });
  } catch (err) {
    throw new UsageError(
      `cannot join the fleet's store: ${(err as Error).message} ` +
        `(check --store or TETHER_STORE, and tether doctor --store)`,
    );
  }
  try {
    return await fn();
  } finally {
    await publishThenLeave(member);
  }
}

/** Sends the fleet what the command changed (a failure is the command's too), then leaves it. */
async function publishThenLeave(member: FleetMember): Promise<void> {
  try {
    const publication = await publishChanges(member);
    if (publication.state === "failed") throw publication.error;
    if (publication.state === "published")
      process.stderr.write(`… published to the fleet as host ${member.host} (${member.shown})\n`);
  } finally {
    await member.close();
  }
}
