/**
 * Classifies an IP address for the egress judge: what a connection to it
 * would reach (the class tables are `address-classes.ts`; parsing and
 * canonical forms `ip-text.ts`; URL hosts `ip-literal.ts`; CIDRs `cidr.ts`).
 *
 * Pure, but for the default `hostInterfaces` (read from `os.networkInterfaces()`,
 * at most once a second, when an address would otherwise be "public").
 *
 * `classifyAddress` takes an address as a resolver or a rule prints it (the
 * strict input of `ip-text.ts`); anything else throws `InvalidAddressError`.
 * A "public" address that one of this host's interfaces has (or an IPv6 whose
 * embedded IPv4 one has) is "host_interface".
 */
import { networkInterfaces } from "node:os";
import { classifyV4, classifyV6, type AddressClass } from "./address-classes.js";
import type { Embedding } from "./embedding.js";
import { MAPPED, format, formatV4, key, mustParse, parseAddress } from "./ip-text.js";

export interface AddressInfo {
  /** Canonical text (see `ip-text.ts`); with `%zone` when one was given. */
  address: string;
  family: 4 | 6;
  class: AddressClass;
  /** The IPv6 zone id, when one was given. */
  zone?: string;
  /** For IPv6 that embeds an IPv4: the IPv4 (canonical) and how it is carried. */
  embedded?: { address: string; via: Embedding };
}

export interface ClassifyOptions {
  /**
   * This host's own addresses. A "public" address equal to one of them (or an
   * IPv6 whose embedded IPv4 equals one) is "host_interface". Default: every
   * address `os.networkInterfaces()` reports (read at most once a second).
   */
  hostInterfaces?: readonly string[];
}

/** `os.networkInterfaces()` costs ~0.2 ms: its answer is reused for a second. */
const INTERFACES_TTL_MS = 1000;
let interfaceCache: { at: number; keys: Set<bigint> } | null = null;

function hostKeys(list: readonly string[] | undefined): Set<bigint> {
  if (list !== undefined) {
    const keys = new Set<bigint>();
    for (const text of list) keys.add(key(mustParse(text, "hostInterfaces")));
    return keys;
  }
  const now = Date.now();
  if (interfaceCache !== null && now - interfaceCache.at >= 0 && now - interfaceCache.at < INTERFACES_TTL_MS)
    return interfaceCache.keys;
  const keys = new Set<bigint>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const parsed = parseAddress(entry.address);
      if (parsed !== null) keys.add(key(parsed));
    }
  }
  interfaceCache = { at: now, keys };
  return keys;
}

/**
 * Classifies an address (strict input, see the module comment); throws
 * `InvalidAddressError` on anything that is not one.
 */
export function classifyAddress(ip: string, options: ClassifyOptions = {}): AddressInfo {
  const parsed = mustParse(ip, "classifyAddress");
  const address = format(parsed);
  if (parsed.family === 4) {
    let cls = classifyV4(parsed.value);
    if (cls === "public" && hostKeys(options.hostInterfaces).has(key(parsed))) cls = "host_interface";
    return { address, family: 4, class: cls };
  }
  const verdict = classifyV6(parsed.value);
  let cls = verdict.cls;
  if (cls === "public") {
    const keys = hostKeys(options.hostInterfaces);
    const own =
      keys.has(parsed.value) || (verdict.embedded !== undefined && keys.has(MAPPED | BigInt(verdict.embedded.value)));
    if (own) cls = "host_interface";
  }
  const info: AddressInfo = { address, family: 6, class: cls };
  if (parsed.zone !== undefined) info.zone = parsed.zone;
  if (verdict.embedded !== undefined)
    info.embedded = { address: formatV4(verdict.embedded.value), via: verdict.embedded.via };
  return info;
}
