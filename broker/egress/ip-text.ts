/**
 * IP addresses as text: strict parsing, canonical printing, and the comparison
 * key — what the classifier, CIDRs, rules and URL hosts all build on.
 *
 * Strict input: IPv4 as four decimal octets without leading zeros
 * (`127.0.0.1`; `0177.0.0.1`, `127.1`, `0x7f000001` are refused, not guessed
 * at), IPv6 in any RFC 4291 text form (`::ffff:127.0.0.1` included) with an
 * optional zone id (`fe80::1%eth0`), no brackets. (URL hosts are read the URL
 * parser's way instead: `ip-literal.ts`.)
 *
 * Canonical forms: IPv4 dotted decimal; IPv6 lowercase hex with the first
 * longest run (≥ 2) of zero groups compressed, IPv4 tails printed in hex
 * (`::ffff:7f00:1`) — exactly what `new URL()` prints between its brackets.
 * A zone id is kept (`fe80::1%eth0`) so that the address can still be dialled.
 */
import { isIPv6 } from "./node-builtins.js";

/** An address, CIDR or IP literal that is malformed (not merely a host name). */
export class InvalidAddressError extends Error {
  override readonly name = "InvalidAddressError";
}

/** A parsed address: IPv4 as an unsigned 32-bit number, IPv6 as a 128-bit bigint. */
export type Parsed = { family: 4; value: number; zone?: undefined } | { family: 6; value: bigint; zone?: string };

const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";
const STRICT_V4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);
/** Interface names and numeric scope ids. */
const ZONE = /^[0-9A-Za-z_.-]{1,64}$/;

function parseStrictV4(text: string): number | null {
  if (!STRICT_V4.test(text)) return null;
  let value = 0;
  for (const part of text.split(".")) value = value * 256 + Number(part);
  return value;
}

/**
 * IPv6 text to 128 bits. Node's validator (inet_pton rules: decimal IPv4 tail
 * without leading zeros) decides what is valid; the parse is our own, because
 * ipaddr.js 2.5 is lenient about the IPv4 tail (it reads `::ffff:0177.0.0.1`
 * as ::ffff:177.0.0.1, accepts `::ffff:0x7f.0.0.1`) and rewrites the
 * IPv4-compatible `::a.b.c.d` into the IPv4-mapped `::ffff:a.b.c.d` — a
 * different address.
 */
export function parseV6(text: string): bigint | null {
  if (text.includes("%") || !isIPv6(text)) return null;
  let hex = text;
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = parseStrictV4(tail);
    if (v4 === null) return null;
    hex = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const split = (part: string) => (part === "" ? [] : part.split(":"));
  const gap = hex.indexOf("::");
  let groups: string[];
  if (gap < 0) {
    groups = split(hex);
    if (groups.length !== 8) return null;
  } else {
    const left = split(hex.slice(0, gap));
    const right = split(hex.slice(gap + 2));
    const missing = 8 - left.length - right.length;
    if (missing < 1) return null;
    groups = [...left, ...Array<string>(missing).fill("0"), ...right];
  }
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return null;
    value = (value << 16n) | BigInt(parseInt(group, 16));
  }
  return value;
}

/** Strictly parses an address (see "Strict input" above), or null. */
export function parseAddress(text: string): Parsed | null {
  if (typeof text !== "string" || text.length === 0 || text.length > 128) return null;
  if (!text.includes(":")) {
    const v4 = parseStrictV4(text);
    return v4 === null ? null : { family: 4, value: v4 };
  }
  const percent = text.indexOf("%");
  if (percent < 0) {
    const v6 = parseV6(text);
    return v6 === null ? null : { family: 6, value: v6 };
  }
  const zone = text.slice(percent + 1);
  if (!ZONE.test(zone)) return null;
  const v6 = parseV6(text.slice(0, percent));
  return v6 === null ? null : { family: 6, value: v6, zone };
}

export function mustParse(text: string, what: string): Parsed {
  const parsed = parseAddress(text);
  if (parsed === null) throw new InvalidAddressError(`${what}: ${JSON.stringify(text)} is not an IP address`);
  return parsed;
}

export function formatV4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 0xff}.${(value >>> 8) & 0xff}.${value & 0xff}`;
}

/** RFC 5952 text without the dotted IPv4 tail — the WHATWG URL serialisation. */
export function formatV6(value: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i -= 1) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1; // a single zero group is not compressed
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(":");
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

export function format(parsed: Parsed): string {
  if (parsed.family === 4) return formatV4(parsed.value);
  return parsed.zone === undefined ? formatV6(parsed.value) : `${formatV6(parsed.value)}%${parsed.zone}`;
}

/** An IPv4 constant written in this code; throws on a typo. */
export function v4(text: string): number {
  const value = parseStrictV4(text);
  if (value === null) throw new Error(`bad IPv4 constant ${text}`);
  return value;
}

/** An IPv6 constant written in this code; throws on a typo. */
export function v6(text: string): bigint {
  const value = parseV6(text);
  if (value === null) throw new Error(`bad IPv6 constant ${text}`);
  return value;
}

/**
 * The IPv4-mapped block `::ffff:0:0/96`, where IPv4 sits in the comparison space. A literal, not
 * `v6("::ffff:0:0")`: Node's first `isIPv6` compiles its pattern (~10 ms), which every broker
 * process then paid at start-up. (tests/unit/egress-address.test.ts holds the two equal.)
 */
export const MAPPED = 0xffff_0000_0000n;

/** Comparable key of an address without its zone: IPv4 as mapped IPv6. */
export function key(parsed: Parsed): bigint {
  return parsed.family === 4 ? MAPPED | BigInt(parsed.value) : parsed.value;
}
