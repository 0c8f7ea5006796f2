/**
 * How an IPv6 address carries an IPv4 address: the one table of embedding
 * forms, read by the classifier (`address.ts`, "what does this address reach")
 * and by the rule matcher (`address-range.ts`, "does this rule name or deny
 * it"), so that the two cannot disagree about which IPv4 an address is.
 *
 * Forms (bits counted from the most significant, 0-based):
 * - ipv4_mapped      ::ffff:0:0/96      IPv4 in bits 96–127
 * - ipv4_compatible  ::/96              IPv4 in bits 96–127 (but `::` and `::1` are themselves)
 * - ipv4_translated  ::ffff:0:0:0/96    IPv4 in bits 96–127 (RFC 6145)
 * - nat64            64:ff9b::/96       IPv4 in bits 96–127 (well-known prefix)
 * - nat64            64:ff9b:1::/48     IPv4 in bits 96–127 (local-use prefix; bits 48–95 free)
 * - 6to4             2002::/16          IPv4 in bits 16–47 (bits 48–127: the site's own subnets)
 * - teredo_client    2001::/32          the client: bits 96–127, inverted
 * - teredo_server    2001::/32          the server: bits 32–63
 *
 * Pure; no imports, so both users can load it first.
 */

export type Embedding =
  | "ipv4_mapped"
  | "ipv4_compatible"
  | "ipv4_translated"
  | "nat64"
  | "6to4"
  | "teredo_client"
  | "teredo_server";

interface Form {
  readonly via: Embedding;
  /** The form's block: `base/length`. */
  readonly base: bigint;
  readonly length: number;
  /** The IPv4 is bits `128 - shift - 32 .. 128 - shift` (i.e. `value >> shift`). */
  readonly shift: number;
  /** Teredo stores the client address inverted. */
  readonly inverted: boolean;
}

const form = (via: Embedding, base: bigint, length: number, shift = 0, inverted = false): Form => ({
  via,
  base,
  length,
  shift,
  inverted,
});

/** In the order the classifier reads them: Teredo's client before its server. */
export const FORMS: readonly Form[] = [
  form("ipv4_mapped", 0xffff_0000_0000n, 96),
  form("ipv4_compatible", 0n, 96),
  form("ipv4_translated", 0xffff_0000_0000_0000n, 96),
  form("nat64", 0x64_ff9bn << 96n, 96),
  form("nat64", 0x64_ff9b_0001n << 80n, 48),
  form("6to4", 0x2002n << 112n, 16, 80),
  form("teredo_client", 0x2001_0000n << 96n, 32, 0, true),
  form("teredo_server", 0x2001_0000n << 96n, 32, 64),
];

const inBlock = (value: bigint, base: bigint, length: number) =>
  value >> BigInt(128 - length) === base >> BigInt(128 - length);

/** `::` and `::1` sit in ::/96 but are the unspecified and loopback addresses, not IPv4-compatible ones. */
const notCompatible = (value: bigint) => value <= 1n;

/**
 * Every IPv4 address an IPv6 address carries, in the classifier's order
 * (empty for none; two for Teredo: client, server).
 */
export function carriedIPv4(value: bigint): Array<{ value: number; via: Embedding }> {
  const out: Array<{ value: number; via: Embedding }> = [];
  for (const f of FORMS) {
    if (!inBlock(value, f.base, f.length)) continue;
    if (f.via === "ipv4_compatible" && notCompatible(value)) continue;
    const bits = Number((value >> BigInt(f.shift)) & 0xffff_ffffn);
    out.push({ value: f.inverted ? ~bits >>> 0 : bits, via: f.via });
  }
  return out;
}

/** An IPv4 range `base/prefix` (base as an unsigned 32-bit number). */
export interface V4Range {
  readonly base: number;
  readonly prefix: number;
  readonly via: Embedding;
}

/**
 * What an IPv6 range `base/prefix` (host bits zero) carries:
 * - `ranges`: the IPv4 range it stands for in each form it lies inside, when
 *   that form's IPv4 bits are at least partly fixed by the prefix;
 * - `whole`: forms through which it reaches *every* IPv4 address — it contains
 *   the form's block, or lies inside it without fixing one IPv4 bit
 *   (`64:ff9b::/96`, `[::ffff:0:0/96]`, `2002::/16`, `64:ff9b:1:5::/64`).
 */
export function carriedIPv4Ranges(base: bigint, prefix: number): { ranges: V4Range[]; whole: Embedding[] } {
  const ranges: V4Range[] = [];
  const whole: Embedding[] = [];
  for (const f of FORMS) {
    if (prefix < f.length) {
      if (inBlock(f.base, base, prefix)) whole.push(f.via); // the range contains the block
      continue;
    }
    if (!inBlock(base, f.base, f.length)) continue;
    // ::/127 and its two addresses are `::` and `::1`, not compatible forms.
    if (f.via === "ipv4_compatible" && prefix >= 127 && notCompatible(base)) continue;
    const fixed = Math.min(32, Math.max(0, prefix - (96 - f.shift)));
    if (fixed === 0) {
      whole.push(f.via);
      continue;
    }
    const hostMask = fixed === 32 ? 0 : 2 ** (32 - fixed) - 1;
    const bits = Number((base >> BigInt(f.shift)) & 0xffff_ffffn);
    // Inverting an aligned block gives an aligned block: [~(b | host), ~b].
    const v4 = f.inverted ? ~(bits | hostMask) >>> 0 : bits - (bits % (hostMask + 1));
    ranges.push({ base: v4 >>> 0, prefix: fixed, via: f.via });
  }
  return { ranges, whole: [...new Set(whole)] };
}
