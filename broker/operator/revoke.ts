/**
 * Revoking an extension's approval (`tether revoke`, the console's revoke),
 * recorded as revoked by `by` (default: the registry's operator name).
 */
import type { Registry } from "../registry/registry.js";

/** What revoking changes of the broker. */
export interface RevokeHost {
  readonly registry: Registry;
}

export interface Revoked {
  readonly name: string;
  /** False when it had no approval in force. */
  readonly revoked: boolean;
  /** What `tether revoke` prints. */
  readonly text: string;
}

export function revokeExtension(host: RevokeHost, name: string, by?: string): Revoked {
  const revoked = host.registry.revoke(name, by !== undefined ? { by } : {});
  return {
    name,
    revoked,
    text: revoked ? `revoked ${name}; running satellites stop on their next call` : `${name} had no active approval`,
  };
}
