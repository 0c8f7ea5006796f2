/**
 * Which non-public addresses the operator lets rules reach at all: one switch
 * per address class (`[net] reach` in policy.toml), and cloud-metadata
 * addresses one by one (`[net] metadata`). A rule must still name the address.
 *
 * - `unspecified` is never reachable (0.0.0.0 and `::` dial this host).
 * - `metadata` is not a switch: each address is listed, so reaching the
 *   credentials endpoint is always a decision about that address.
 * - `allow_private = true` (the older switch) means loopback, private,
 *   link_local and cgnat — not metadata, and not the rarer classes.
 */
import { parseAddressRange, rangeMatches, type AddressRange } from "./address-range.js";
import type { AddressClass } from "./address-classes.js";
import { classifyAddress } from "./address.js";

/** The classes an operator may switch on. */
export const REACH_CLASSES = [
  "loopback",
  "private",
  "link_local",
  "cgnat",
  "host_interface",
  "documentation",
  "benchmarking",
  "reserved",
  "multicast",
  "broadcast",
] as const;
export type ReachClass = (typeof REACH_CLASSES)[number];

/** What `allow_private = true` stands for. */
export const ALLOW_PRIVATE: readonly ReachClass[] = ["loopback", "private", "link_local", "cgnat"];

export interface Reach {
  readonly classes: ReadonlySet<ReachClass>;
  /** Metadata addresses the operator named, each one address. */
  readonly metadata: readonly AddressRange[];
}

export const NO_REACH: Reach = { classes: new Set(), metadata: [] };

/** Is `text` a cloud-metadata address (strict form)? */
export function isMetadataAddress(text: string): boolean {
  try {
    return classifyAddress(text, { hostInterfaces: [] }).class === "metadata";
  } catch {
    return false;
  }
}

/** Builds a Reach from the policy file's values (already validated). */
export function reachOf(classes: readonly ReachClass[], metadata: readonly string[], allowPrivate: boolean): Reach {
  return {
    classes: new Set([...classes, ...(allowPrivate ? ALLOW_PRIVATE : [])]),
    metadata: metadata.map((text) => parseAddressRange(text)!),
  };
}

const human = (cls: AddressClass) => cls.replace(/_/g, "-");

/**
 * Null when the operator lets a rule reach `address` (of class `cls`, not
 * public); otherwise the audit rule and the message, saying what to change.
 */
export function reachRefusal(
  reach: Reach,
  address: string,
  cls: AddressClass,
): { rule: string; reason: string } | null {
  if (cls === "unspecified")
    return {
      rule: "address:unspecified",
      reason: `${address} is an unspecified address, which dials this host itself: never reachable`,
    };
  if (cls === "metadata") {
    if (reach.metadata.some((m) => rangeMatches(m, address, "decisive"))) return null;
    return {
      rule: "operator:no-metadata",
      reason:
        `${address} is a cloud metadata address; it is reachable only ` +
        `when the operator lists it in policy.toml ([net] metadata = ["…"])`,
    };
  }
  if ((reach.classes as ReadonlySet<string>).has(cls)) return null;
  return {
    rule: "operator:no-private",
    reason:
      `the operator's policy forbids ${human(cls)} addresses (${address}); ` +
      `to allow them, add "${cls}" to [net] reach in policy.toml`,
  };
}
