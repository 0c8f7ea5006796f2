/**
 * IP addresses for the egress judge: parse strictly, print canonically, and
 * classify what a connection to the address would reach.
 *
 * Pure, but for the default `hostInterfaces` (read from `os.networkInterfaces()`,
 * at most once a second, when an address would otherwise be "public").
 *
 * Input forms
 * - `classifyAddress` and `cidrContains` take an address as a resolver or a rule
 *   prints it: IPv4 as four decimal octets without leading zeros (`127.0.0.1`;
 *   `0177.0.0.1`, `127.1`, `0x7f000001` are refused, not guessed at), IPv6 in
 *   any RFC 4291 text form (`::ffff:127.0.0.1` included) with an optional zone
 *   id (`fe80::1%eth0`), no brackets. Anything else throws `InvalidAddressError`.
 * - `parseIpLiteral` takes a URL host and does what the WHATWG URL parser does
 *   with it (every legacy IPv4 spelling included), so a host the URL parser
 *   would read as an IP is never mistaken for a name.
 *
 * Canonical forms: IPv4 dotted decimal; IPv6 lowercase hex with the first
 * longest run (≥ 2) of zero groups compressed, IPv4 tails printed in hex
 * (`::ffff:7f00:1`) — exactly what `new URL()` prints between its brackets.
 * A zone id is kept (`fe80::1%eth0`) so that the address can still be dialled.
 *
 * Classes (first match wins; see `V4_RANGES` / `classifyV6` for the tables):
 * - metadata      cloud metadata / credential endpoints (169.254.169.254,
 *                 169.254.170.2, 169.254.170.23, 169.254.0.23, 100.100.100.200,
 *                 168.63.129.16, fd00:ec2::254, fd00:ec2::23, fd20:ce::254) —
 *                 checked before the range they sit in.
 * - unspecified   0.0.0.0/8 (0.0.0.0 dials the local host on Linux), ::
 * - loopback      127.0.0.0/8, ::1
 * - private       RFC 1918, fc00::/7 (unique local), fec0::/10 (site local)
 * - link_local    169.254.0.0/16, fe80::/10
 * - cgnat         100.64.0.0/10
 * - multicast     224.0.0.0/4, ff00::/8
 * - broadcast     255.255.255.255
 * - documentation 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20
 * - benchmarking  198.18.0.0/15, 2001:2::/48
 * - reserved      240.0.0.0/4, 192.0.0.0/24, 192.88.99.0/24; in IPv6 everything
 *                 outside 2000::/3 not named above (incl. 100::/64 discard,
 *                 5f00::/16), 2001::/23 except Teredo and its globally
 *                 reachable assignments, and IPv4-compatible `::a.b.c.d` whose
 *                 IPv4 is public (deprecated; not routable as such).
 * - host_interface a "public" address that one of this host's interfaces has.
 * - public        everything else.
 *
 * IPv6 that carries an IPv4 is judged by that IPv4 (`embedded`): IPv4-mapped
 * `::ffff:0:0/96`, IPv4-compatible `::/96`, IPv4-translated `::ffff:0:0:0/96`
 * (RFC 6145), NAT64 `64:ff9b::/96` and `64:ff9b:1::/48` (IPv4 in the last 32
 * bits, the /96 form DNS64 synthesises), 6to4 `2002::/16` (bits 16–47) and
 * Teredo `2001::/32` (client = inverted last 32 bits; server = bits 32–63).
 * A non-public embedded IPv4 gives the whole address its class. The forms are
 * one table (`embedding.ts`), which the rule matcher (`address-range.ts`) reads
 * too, so a rule and the classifier agree on which IPv4 an address carries.
 *
 * CIDR matching treats IPv4 as the IPv4-mapped block `::ffff:0:0/96`:
 * `10.0.0.0/8` contains `::ffff:10.1.2.3`, `::ffff:10.0.0.0/104` contains
 * `10.1.2.3`, and `::/0` contains every IPv4 address too.
 */
import { isIPv6 } from "node:net";
import { networkInterfaces } from "node:os";
import { domainToASCII } from "node:url";
import { carriedIPv4, type Embedding } from "./embedding.js";

export type { Embedding } from "./embedding.js";

export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link_local"
  | "cgnat"
  | "multicast"
  | "unspecified"
  | "metadata"
  | "broadcast"
  | "reserved"
  | "documentation"
  | "benchmarking"
  | "host_interface";

/** Every class, for exhaustive tables and tests. */
export const ADDRESS_CLASSES: readonly AddressClass[] = [
  "public",
  "loopback",
  "private",
  "link_local",
  "cgnat",
  "multicast",
  "unspecified",
  "metadata",
  "broadcast",
  "reserved",
  "documentation",
  "benchmarking",
  "host_interface",
];

export interface AddressInfo {
  /** Canonical text (see the module comment); with `%zone` when one was given. */
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

export interface Cidr {
  /** The canonical network address (host bits are zero). */
  address: string;
  prefix: number;
  family: 4 | 6;
}

/** An address, CIDR or IP literal that is malformed (not merely a host name). */
export class InvalidAddressError extends Error {
  override readonly name = "InvalidAddressError";
}

// ---------------------------------------------------------------------------
// Parsing and printing
// ---------------------------------------------------------------------------

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
function parseV6(text: string): bigint | null {
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

/** Strictly parses an address (see "Input forms"), or null. */
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

function mustParse(text: string, what: string): Parsed {
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

function format(parsed: Parsed): string {
  if (parsed.family === 4) return formatV4(parsed.value);
  return parsed.zone === undefined ? formatV6(parsed.value) : `${formatV6(parsed.value)}%${parsed.zone}`;
}

// ---------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------

function v4(text: string): number {
  const value = parseStrictV4(text);
  if (value === null) throw new Error(`bad IPv4 constant ${text}`);
  return value;
}

function v6(text: string): bigint {
  const value = parseV6(text);
  if (value === null) throw new Error(`bad IPv6 constant ${text}`);
  return value;
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

const V4_METADATA = new Set(
  [
    "169.254.169.254", // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack… instance metadata
    "169.254.170.2", // AWS ECS task metadata and credentials
    "169.254.170.23", // AWS EKS Pod Identity agent
    "169.254.0.23", // Tencent Cloud metadata
    "100.100.100.200", // Alibaba Cloud metadata
    "168.63.129.16", // Azure WireServer (a public-range platform address)
  ].map(v4),
);

const V6_METADATA = new Set(
  [
    "fd00:ec2::254", // AWS instance metadata over IPv6
    "fd00:ec2::23", // AWS EKS Pod Identity agent over IPv6
    "fd20:ce::254", // GCP metadata server for IPv6-only instances
  ].map(v6),
);

/** IPv4 ranges, first match wins (metadata is checked before these). */
const V4_RANGES: ReadonlyArray<readonly [string, number, AddressClass]> = [
  ["0.0.0.0", 8, "unspecified"],
  ["127.0.0.0", 8, "loopback"],
  ["10.0.0.0", 8, "private"],
  ["172.16.0.0", 12, "private"],
  ["192.168.0.0", 16, "private"],
  ["169.254.0.0", 16, "link_local"],
  ["100.64.0.0", 10, "cgnat"],
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"],
  ["192.0.2.0", 24, "documentation"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["198.18.0.0", 15, "benchmarking"],
  ["192.0.0.0", 24, "reserved"], // IETF protocol assignments (DS-Lite, NAT64 discovery…)
  ["192.88.99.0", 24, "reserved"], // deprecated 6to4 relay anycast
];
/** One row of a class table: `base/prefix` is `cls` unless an earlier row matched. */
export interface ClassRow<T extends number | bigint> {
  readonly base: T;
  readonly prefix: number;
  readonly cls: AddressClass;
}

/** Every IPv4 address's class, first match wins: metadata points, the ranges, then public. */
export const V4_CLASS_TABLE: ReadonlyArray<ClassRow<number>> = [
  ...[...V4_METADATA].map((base) => ({ base, prefix: 32, cls: "metadata" as const })),
  ...V4_RANGES.map(([base, prefix, cls]) => ({ base: v4(base), prefix, cls })),
  { base: 0, prefix: 0, cls: "public" },
];

/** The class of an IPv4 address, before the host-interface check. */
export function classifyV4(value: number): AddressClass {
  for (const row of V4_CLASS_TABLE) if (inV4(value, row.base, row.prefix)) return row.cls;
  return "public";
}

const v6Row = (text: string, prefix: number, cls: AddressClass): ClassRow<bigint> => ({ base: v6(text), prefix, cls });

/**
 * Every IPv6 address's class that carries no IPv4 (see `embedding.ts` for
 * those), first match wins; the last row is everything else.
 */
export const V6_CLASS_TABLE: ReadonlyArray<ClassRow<bigint>> = [
  ...[...V6_METADATA].map((base) => ({ base, prefix: 128, cls: "metadata" as const })),
  v6Row("::", 128, "unspecified"),
  v6Row("::1", 128, "loopback"),
  v6Row("ff00::", 8, "multicast"),
  v6Row("fe80::", 10, "link_local"),
  v6Row("fec0::", 10, "private"), // site local (deprecated)
  v6Row("fc00::", 7, "private"), // unique local
  v6Row("2001:db8::", 32, "documentation"),
  v6Row("3fff::", 20, "documentation"),
  v6Row("2001:2::", 48, "benchmarking"),
  // Globally reachable assignments inside 2001::/23 (IANA special-purpose registry).
  v6Row("2001:1::1", 128, "public"), // PCP anycast
  v6Row("2001:1::2", 128, "public"), // TURN anycast
  v6Row("2001:1::3", 128, "public"), // DNS-SD SRP anycast
  v6Row("2001:3::", 32, "public"), // AMT
  v6Row("2001:4:112::", 48, "public"), // AS112-v6
  v6Row("2001::", 23, "reserved"), // IETF protocol assignments
  v6Row("2000::", 3, "public"), // global unicast
  v6Row("::", 0, "reserved"), // everything outside 2000::/3 not named above
];

type V6Verdict = { cls: AddressClass; embedded?: { value: number; via: Embedding } };

/**
 * The IPv4 an IPv6 address is judged by, and the class it gives: the first
 * carried IPv4 that is not public (Teredo: client, then server), else the
 * first. An IPv4-compatible address of a public IPv4 is `reserved` (deprecated;
 * not routable as such). Null when the address carries none.
 */
export function decisiveIPv4(value: bigint): Required<V6Verdict> | null {
  const carried = carriedIPv4(value);
  if (carried.length === 0) return null;
  const judged = carried.map((c) => ({ cls: classifyV4(c.value), embedded: c }));
  const decisive = judged.find((j) => j.cls !== "public") ?? judged[0]!;
  const cls = decisive.cls === "public" && decisive.embedded.via === "ipv4_compatible" ? "reserved" : decisive.cls;
  return { cls, embedded: decisive.embedded };
}

/** The class of an IPv6 address, before the host-interface check. */
function classifyV6(value: bigint): V6Verdict {
  const decisive = decisiveIPv4(value);
  if (decisive !== null) return decisive;
  for (const row of V6_CLASS_TABLE) if (inV6(value, row.base, row.prefix)) return { cls: row.cls };
  return { cls: "reserved" };
}

const MAPPED = v6("::ffff:0:0");

/** Comparable key of an address without its zone: IPv4 as mapped IPv6. */
export function key(parsed: Parsed): bigint {
  return parsed.family === 4 ? MAPPED | BigInt(parsed.value) : parsed.value;
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
  if (interfaceCache !== null && now - interfaceCache.at >= 0 && now - interfaceCache.at < INTERFACES_TTL_MS) return interfaceCache.keys;
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
    const own = keys.has(parsed.value) || (verdict.embedded !== undefined && keys.has(MAPPED | BigInt(verdict.embedded.value)));
    if (own) cls = "host_interface";
  }
  const info: AddressInfo = { address, family: 6, class: cls };
  if (parsed.zone !== undefined) info.zone = parsed.zone;
  if (verdict.embedded !== undefined) info.embedded = { address: formatV4(verdict.embedded.value), via: verdict.embedded.via };
  return info;
}

// ---------------------------------------------------------------------------
// URL hosts
// ---------------------------------------------------------------------------

/** The WHATWG "IPv4 number parser": decimal, 0x hex, 0-prefixed octal; "" after a prefix is 0. */
function ipv4Number(part: string): bigint | null {
  if (part === "") return null;
  let digits = part;
  let radix = 10;
  if (/^0x/i.test(digits)) {
    digits = digits.slice(2);
    radix = 16;
  } else if (digits.length >= 2 && digits.startsWith("0")) {
    digits = digits.slice(1);
    radix = 8;
  }
  if (digits === "") return 0n;
  const ok = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!ok.test(digits)) return null;
  return BigInt(radix === 16 ? `0x${digits}` : radix === 8 ? `0o${digits}` : digits);
}

/** The WHATWG "ends in a number checker": such a host is an IPv4 address or invalid, never a name. */
function endsInANumber(host: string): boolean {
  const parts = host.split(".");
  if (parts[parts.length - 1] === "" && parts.length > 1) parts.pop();
  const last = parts[parts.length - 1] ?? "";
  if (last !== "" && /^[0-9]+$/.test(last)) return true;
  return ipv4Number(last) !== null;
}

/** The WHATWG "IPv4 parser"; null where the URL parser would fail. */
function whatwgIPv4(host: string): number | null {
  const parts = host.split(".");
  if (parts[parts.length - 1] === "" && parts.length > 1) parts.pop();
  if (parts.length > 4) return null;
  const numbers: bigint[] = [];
  for (const part of parts) {
    const n = ipv4Number(part);
    if (n === null) return null;
    numbers.push(n);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255n)) return null;
  if (last >= 256n ** BigInt(5 - parts.length)) return null;
  let value = last;
  numbers.forEach((n, i) => {
    value += n * 256n ** BigInt(3 - i);
  });
  return Number(value);
}

/** ASCII characters a host name may hold (anything else ends or breaks a URL host). */
const HOST_ASCII = /^[A-Za-z0-9._-]$/;

function hasForbiddenAscii(text: string): boolean {
  for (const ch of text) if (ch.charCodeAt(0) < 0x80 && !HOST_ASCII.test(ch)) return true;
  return false;
}

/**
 * The canonical IP address a URL host denotes, or null when the host is a name.
 *
 * `host` is what `new URL(...).hostname` gives (IPv6 in brackets, IPv4 already
 * normalised), but raw hosts are read the way the URL parser reads them:
 * `0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`, `127.0.0.1.` and full-width
 * digits are all 127.0.0.1. Unbracketed IPv6 is accepted too; zone ids are not
 * (the URL parser refuses them). A host that is an IP literal by the URL rules
 * but malformed (`1.2.3.4.5`, `256.0.0.1`, `[::ffff:0177.0.0.1]`) throws
 * `InvalidAddressError`. Null only means "not an IP literal": the caller must
 * still validate the name (`normaliseHost`).
 */
export function parseIpLiteral(host: string): string | null {
  if (typeof host !== "string") throw new InvalidAddressError("parseIpLiteral: the host is not a string");
  if (host.startsWith("[") || host.endsWith("]")) {
    const inner = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : "";
    const value = inner.includes(":") && !inner.includes("%") ? parseV6(inner) : null;
    if (value === null) throw new InvalidAddressError(`${JSON.stringify(host)} is not an IPv6 literal`);
    return formatV6(value);
  }
  if (host.includes(":")) {
    const value = host.includes("%") ? null : parseV6(host);
    if (value === null) throw new InvalidAddressError(`${JSON.stringify(host)} is not an IPv6 address`);
    return formatV6(value);
  }
  if (hasForbiddenAscii(host)) return null; // not an IP literal; not a valid name either
  // Non-ASCII (full-width digits, ideographic full stops) maps as the URL parser maps it.
  const ascii = /^[\x00-\x7f]*$/.test(host) ? host.toLowerCase() : domainToASCII(host);
  if (ascii === "") {
    if (host === "") return null;
    // domainToASCII also fails on an IPv4-looking host it cannot parse: refuse it as one.
    const mapped = host.normalize("NFKC").replace(/[\u3002\uff0e\uff61]/g, ".");
    if (/^[0-9a-fx.]*$/i.test(mapped) && endsInANumber(mapped.toLowerCase())) {
      throw new InvalidAddressError(`${JSON.stringify(host)} is not a valid IPv4 address`);
    }
    return null;
  }
  if (!endsInANumber(ascii)) return null;
  const value = whatwgIPv4(ascii);
  if (value === null) throw new InvalidAddressError(`${JSON.stringify(host)} ends in a number but is not a valid IPv4 address`);
  return formatV4(value);
}

// ---------------------------------------------------------------------------
// CIDRs
// ---------------------------------------------------------------------------

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
