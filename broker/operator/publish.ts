/**
 * The step after every change an operator makes (an approval, a revocation, an
 * uninstall) on a host of a fleet: what changed in this host's registry is
 * sent to the fleet's store. A command publishes once when it is done
 * (broker/cli/fleet-join.ts), the console after each action; both through
 * this one step.
 */
import type { SessionFleet } from "../broker-options.js";

/** How the publish went: no fleet, nothing had changed, sent, or failed (the change stands on this host). */
export type Publication =
  | { readonly state: "alone" }
  | { readonly state: "unchanged" }
  | { readonly state: "published" }
  | { readonly state: "failed"; readonly error: Error };

/** Sends `fleet` what changed here; never throws: a failure is answered, for the caller to say. */
export async function publishChanges(fleet: Pick<SessionFleet, "publish"> | null): Promise<Publication> {
  if (fleet === null) return { state: "alone" };
  try {
    return (await fleet.publish()) ? { state: "published" } : { state: "unchanged" };
  } catch (err) {
    return { state: "failed", error: err instanceof Error ? err : new Error(String(err)) };
  }
}
