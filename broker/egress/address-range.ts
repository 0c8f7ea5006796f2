/**
 * Address ranges as egress rules use them: what a range written in a rule
 * matches, how big it is and which address classes it touches.
 *
 * An address rule stands for IPv4 addresses in every form that carries them
 * (the table in `embedding.ts`, the same one the classifier reads):
 * - a range matches an address when it contains the address itself (IPv4 as
 *   the mapped `::ffff:a.b.c.d`, as `cidrContains` does) or the IPv4 the
 *   address carries — so `10.0.0.0/8` matches `64:ff9b::a01:203`,
 *   `2002:a01:203::1` and `::ffff:0:a01:203`;
 * - a range written *inside* an embedding form is also the IPv4 range it
 *   carries: `[64:ff9b::a00:0/120]` matches `10.0.0.5` and `::ffff:10.0.0.5`.
 *   A range that reaches every IPv4 through a form (it holds the form's whole
 *   block, `[2002::/16]`, `[::ffff:0:0/96]`) matches only the IPv6 addresses
 *   in it: an operator denying a translation prefix does not mean all of IPv4
 *   (and such a range is never an allow rule: `address-rule.ts`).
 *
 * Which carried IPv4 counts: for a deny, any (Teredo carries two); for an
 * allow, the one the classifier judged the address by (`decisiveIPv4`), so a
 * rule naming a Teredo server cannot vouch for the loopback client beside it.
 */
import { decisiveIPv4, V4_CLASS_TABLE, v6ClassTable, type AddressClass, type ClassRow } from "./address-classes.js";
import { inV4, inV6, parseCidr } from "./cidr.js";
import { carriedIPv4, carriedIPv4Ranges, type Embedding, type V4Range } from "./embedding.js";
import { formatV4, formatV6, key, MAPPED, parseAddress } from "./ip-text.js";

export interface AddressRange {
  /** Canonical `address/prefix` as written (`10.0.0.0/24`, `64:ff9b::a00:0/120`). */
  readonly cidr: string;
  readonly family: 4 | 6;
  /** The range in the comparison space: IPv4 as mapped IPv6. */
  readonly base: bigint;
  readonly prefix: number;
  /** The IPv4 ranges it carries, when written inside embedding forms. */
  readonly carried: readonly V4Range[];
  /** Forms through which it reaches every IPv4 address. */
  readonly whole: readonly Embedding[];
}

/** `address/prefix` or a bare address (strict, as `parseCidr`); null when malformed. */
export function parseAddressRange(text: string): AddressRange | null {
  const cidr = parseCidr(text);
  if (cidr === null) return null;
  const parsed = parseAddress(cidr.address)!;
  const base = key(parsed);
  const prefix = cidr.family === 4 ? cidr.prefix + 96 : cidr.prefix;
  const { ranges, whole } = cidr.family === 4 ? { ranges: [], whole: [] } : carriedIPv4Ranges(base, prefix);
  // Inside ::ffff:0:0/96 the range already is IPv4 in the comparison space.
  const carried = ranges.filter((r) => r.via !== "ipv4_mapped");
  return { cidr: `${cidr.address}/${cidr.prefix}`, family: cidr.family, base, prefix, carried, whole };
}

/** Is the whole range IPv4 (written as IPv4 or as IPv4-mapped)? */
const isV4 = (range: AddressRange) => range.prefix >= 96 && inV6(range.base, MAPPED, 96);

/**
 * Does `range` match `address` (strict text, as a resolver prints it)? `which`
 * IPv4 of the address counts: `decisive` for allows, `every` for denies.
 */
export function rangeMatches(range: AddressRange, address: string, which: "decisive" | "every"): boolean {
  const parsed = parseAddress(address);
  if (parsed === null) return false;
  const self = key(parsed);
  if (inV6(self, range.base, range.prefix)) return true;
  let v4s: number[];
  if (parsed.family === 4) v4s = [parsed.value];
  else if (which === "every") v4s = carriedIPv4(parsed.value).map((c) => c.value);
  else {
    const decisive = decisiveIPv4(parsed.value);
    v4s = decisive === null ? [] : [decisive.embedded.value];
  }
  return v4s.some(
    (v) => inV6(MAPPED | BigInt(v), range.base, range.prefix) || range.carried.some((r) => inV4(v, r.base, r.prefix)),
  );
}

/** The range measured where it counts: on the IPv4 it carries, else as IPv6. */
export interface RangeSize {
  readonly family: 4 | 6;
  /** The prefix length the size is measured on (the widest carried IPv4 range). */
  readonly prefix: number;
  /** Number of addresses, as text (`65,536`, `2^80`). */
  readonly count: string;
}

export function rangeSize(range: AddressRange): RangeSize {
  if (range.whole.length > 0) return { family: 4, prefix: 0, count: count(32) };
  if (isV4(range)) return { family: 4, prefix: range.prefix - 96, count: count(128 - range.prefix) };
  if (range.carried.length > 0) {
    const widest = Math.min(...range.carried.map((r) => r.prefix));
    return { family: 4, prefix: widest, count: count(32 - widest) };
  }
  return { family: 6, prefix: range.prefix, count: count(128 - range.prefix) };
}

function count(bits: number): string {
  return bits <= 40 ? (2 ** bits).toLocaleString("en-US") : `2^${bits}`;
}

/** Is the range one address (in every form it is read)? */
export function isSingleAddress(range: AddressRange): boolean {
  return range.whole.length === 0 && range.prefix === 128 && range.carried.every((r) => r.prefix === 32);
}

/**
 * Which rows of a first-match table `base/prefix` touches: every row that
 * contains it (then stop: later rows are shadowed) or that it contains and no
 * earlier row shadows.
 */
function touched<T extends number | bigint>(
  table: ReadonlyArray<ClassRow<T>>,
  base: T,
  prefix: number,
  within: (v: T, b: T, p: number) => boolean,
): Set<AddressClass> {
  const out = new Set<AddressClass>();
  for (const [i, row] of table.entries()) {
    if (row.prefix <= prefix && within(base, row.base, row.prefix)) {
      out.add(row.cls);
      break;
    }
    if (row.prefix > prefix && within(row.base, base, prefix)) {
      const shadowed = table
        .slice(0, i)
        .some((earlier) => earlier.prefix <= row.prefix && within(row.base, earlier.base, earlier.prefix));
      if (!shadowed) out.add(row.cls);
    }
  }
  return out;
}

const v4Classes = (base: number, prefix: number) => touched(V4_CLASS_TABLE, base, prefix, inV4);

/** Every address class the range touches (host_interface is not known until an answer). */
export function rangeClasses(range: AddressRange): AddressClass[] {
  const out = new Set<AddressClass>();
  if (range.whole.length > 0) for (const cls of v4Classes(0, 0)) out.add(cls);
  if (isV4(range)) {
    for (const cls of v4Classes(Number(range.base & 0xffff_ffffn), range.prefix - 96)) out.add(cls);
  } else if (range.carried.length > 0) {
    for (const r of range.carried) {
      for (const cls of v4Classes(r.base, r.prefix))
        out.add(cls === "public" && r.via === "ipv4_compatible" ? "reserved" : cls);
    }
  } else {
    // Pure IPv6, or a range that holds whole embedding blocks (and so also every IPv4, above).
    for (const cls of touched(v6ClassTable(), range.base, range.prefix, inV6)) out.add(cls);
  }
  return [...out];
}

/** The carried IPv4 ranges as text (`10.0.0.0/24 (nat64)`), for messages and review. */
export function describeCarried(range: AddressRange): string[] {
  return range.carried.map((r) => `${formatV4(r.base)}/${r.prefix} (${r.via.replace(/_/g, "-")})`);
}

/** The range's own canonical text, with brackets for a URL. */
export function rangeHost(range: AddressRange): string {
  const single = range.prefix === 128;
  if (isV4(range)) {
    const v4 = formatV4(Number(range.base & 0xffff_ffffn));
    return single ? v4 : `[${v4}/${range.prefix - 96}]`;
  }
  const v6 = formatV6(range.base);
  return single ? `[${v6}]` : `[${v6}/${range.prefix}]`;
}
