/**
 * CIDRs: strict `address/prefix` parsing, containment, and the prefix
 * arithmetic the class tables and rule ranges share.
 *
 * CIDR matching treats IPv4 as the IPv4-mapped block `::ffff:0:0/96`:
 * `10.0.0.0/8` contains `::ffff:10.1.2.3`, `::ffff:10.0.0.0/104` contains
 * `10.1.2.3`, and `::/0` contains every IPv4 address too.
 */
import { InvalidAddressError, format, key, mustParse, parseAddress } from "./ip-text.js";

export interface Cidr {
  /** The canonical network address (host bits are zero). */
  address: string;
  prefix: number;
  family: 4 | 6;
}

export function inV4(value: number, base: number, prefix: number): boolean {
  if (prefix === 0) return true;
  const shift = 32 - prefix;
  return Math.floor(value / 2 ** shift) === Math.floor(base / 2 ** shift);
}

export function inV6(value: bigint, base: bigint, prefix: number): boolean {
  const shift = BigInt(128 - prefix);
  return value >> shift === base >> shift;
}

const PREFIX = /^(?:0|[1-9][0-9]{0,2})$/;

/**
 * Parses `address/prefix` or a bare address (= /32 or /128). Strict: the
 * address as `classifyAddress` takes it but without a zone, a decimal prefix
 * without leading zeros, and no host bits set (`10.1.2.3/8` is refused — say
 * `10.0.0.0/8` or `10.1.2.3/32`). Null when malformed.
 */
export function parseCidr(text: string): Cidr | null {
  if (typeof text !== "string") return null;
  const slash = text.indexOf("/");
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const parsed = parseAddress(addressText);
  if (parsed === null || parsed.zone !== undefined) return null;
  const bits = parsed.family === 4 ? 32 : 128;
  let prefix = bits;
  if (slash >= 0) {
    const prefixText = text.slice(slash + 1);
    if (!PREFIX.test(prefixText)) return null;
    prefix = Number(prefixText);
    if (prefix > bits) return null;
  }
  if (parsed.family === 4) {
    const hostBits = 32 - prefix;
    if (hostBits > 0 && parsed.value % 2 ** hostBits !== 0) return null;
  } else {
    const hostBits = BigInt(128 - prefix);
    if ((parsed.value & ((1n << hostBits) - 1n)) !== 0n) return null;
  }
  return { address: format(parsed), prefix, family: parsed.family };
}

/**
 * Does the CIDR (or single address) contain `ip`? IPv4 is the IPv4-mapped
 * block of IPv6 for this purpose (see the module comment); a zone on `ip` is
 * ignored. Throws `InvalidAddressError` on a malformed CIDR or address.
 */
export function cidrContains(cidr: string | Cidr, ip: string): boolean {
  const text = typeof cidr === "string" ? cidr : `${cidr.address}/${cidr.prefix}`;
  const range = parseCidr(text);
  if (range === null) throw new InvalidAddressError(`cidrContains: ${JSON.stringify(text)} is not a CIDR`);
  const net = mustParse(range.address, "cidrContains");
  const prefix = range.family === 4 ? range.prefix + 96 : range.prefix;
  return inV6(key(mustParse(ip, "cidrContains")), key(net), prefix);
}
