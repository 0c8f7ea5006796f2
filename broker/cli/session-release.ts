/**
 * `tether session release --host <name>`: the operator knows a fleet's host is
 * dead, so its sessions need not wait for their leases to run out
 * (docs/fleet.md#sessions-one-host-at-a-time).
 */
import type { Broker } from "../broker.js";
import { UsageError } from "./command.js";

export async function releaseHost(
  broker: Broker,
  rest: readonly string[],
  host: string | undefined,
): Promise<{ value: unknown; text: string }> {
  if (rest.length > 0) throw new UsageError(`unexpected '${rest[0]}': tether session release --host <name>`);
  if (host === undefined || !/^[^\s/]{1,255}$/.test(host))
    throw new UsageError("tether session release --host <name>: the dead host's name, as TETHER_FLEET_HOST gave it");
  const { FleetMember } = await import("../fleet.js");
  const member = broker.fleet instanceof FleetMember ? broker.fleet : null;
  if (member === null)
    throw new UsageError("tether session release works on a fleet: give its store (--store or TETHER_STORE)");
  if (host === member.host) throw new UsageError(`'${host}' is this host; release the sessions of another, dead, host`);
  const seen = (await member.hosts()).find((h) => h.name === host);
  const released = await member.releaseHost(host);
  const ago = seen === undefined || seen.seenAt === 0 ? null : Math.round((Date.now() - seen.seenAt) / 1000);
  const warning =
    ago !== null && ago < 30
      ? `\nnote: host ${host} was seen ${ago} s ago; if it still runs, ` +
        `it serves none of these sessions from now on (session_moved)`
      : "";
  return {
    value: { host, released },
    text:
      (released.length === 0
        ? `host ${host} held no session`
        : `released host ${host}'s leases of ${released.length} session(s): ${released.join(", ")}; ` +
          "they open on another host at once") + warning,
  };
}
