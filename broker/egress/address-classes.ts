/**
 * The address classes and the tables that give every address its class:
 * what a connection to the address would reach, before the host-interface
 * check (`address.ts`).
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
 * - host_interface a "public" address that one of this host's interfaces has
 *                 (decided in `address.ts`).
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
 */
import { inV4, inV6 } from "./cidr.js";
import { carriedIPv4, type Embedding } from "./embedding.js";
import { v4, v6 } from "./ip-text.js";

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

const V6_METADATA = [
  "fd00:ec2::254", // AWS instance metadata over IPv6
  "fd00:ec2::23", // AWS EKS Pod Identity agent over IPv6
  "fd20:ce::254", // GCP metadata server for IPv6-only instances
];

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
 * those), first match wins; the last row is everything else. Built at first
 * use: its constants are parsed by Node's `isIPv6`, whose first call compiles
 * a pattern (~10 ms) every broker process paid at start-up, judging or not.
 */
let v6Table: ReadonlyArray<ClassRow<bigint>> | null = null;
export function v6ClassTable(): ReadonlyArray<ClassRow<bigint>> {
  v6Table ??= [
    ...V6_METADATA.map((text) => v6Row(text, 128, "metadata")),
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
  return v6Table;
}

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
export function classifyV6(value: bigint): V6Verdict {
  const decisive = decisiveIPv4(value);
  if (decisive !== null) return decisive;
  for (const row of v6ClassTable()) if (inV6(value, row.base, row.prefix)) return { cls: row.cls };
  return { cls: "reserved" };
}
