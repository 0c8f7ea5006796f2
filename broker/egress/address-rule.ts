/**
 * What an *allow* rule may name by address (manifest rules, session allow
 * lists). Operator denies are not checked here: a broad deny takes away.
 *
 * Limits, each an install error naming the rule, why, and what to write:
 * - unspecified addresses (0.0.0.0/8, `::`, and every form carrying them) are
 *   never a rule: a connection to them reaches this host itself;
 * - a range reaching every IPv4 address through an embedding form
 *   (`[::ffff:0:0/96]`, `[64:ff9b::/96]`, `[::/64]`) is refused;
 * - the widest range is /16 for IPv4 (65,536 addresses: one private network
 *   as cloud providers hand them out) and /48 for IPv6 (one site). A range
 *   written in an embedding form is measured on the IPv4 it carries
 *   (`[64:ff9b::a00:0/104]` is 10.0.0.0/8: refused);
 * - loopback, link-local and cloud-metadata addresses are named one address
 *   at a time, never inside a range: a range over them reaches services that
 *   trust the host (and 169.254.0.0/16 holds the metadata endpoints);
 * - Teredo forms are refused: they carry two IPv4 addresses (write the one meant).
 * A single metadata address may be written, but is reachable only when the
 * operator lists it too (`[net] metadata` in policy.toml, `reach.ts`).
 */
import { describeCarried, isSingleAddress, rangeClasses, rangeSize, type AddressRange } from "./address-range.js";
import type { AddressClass } from "./address-classes.js";

export const MAX_V4_PREFIX = 16;
export const MAX_V6_PREFIX = 48;

/** Classes a range (more than one address) may not touch. */
const ONE_AT_A_TIME: readonly AddressClass[] = ["loopback", "link_local", "metadata"];

const human = (word: string) => word.replace(/_/g, "-");

/** Why `range` may not be an allow rule, saying what to write instead; null when it may. */
export function addressRuleProblem(range: AddressRange): string | null {
  const written =
    range.cidr.endsWith("/32") || range.cidr.endsWith("/128") ? range.cidr.replace(/\/\d+$/, "") : range.cidr;
  if (range.whole.length > 0) {
    return (
      `'${written}' reaches every IPv4 address (through the ${range.whole.map(human).join(", ")} ` +
      `form): write the IPv4 range you mean, at most /${MAX_V4_PREFIX}, e.g. [10.1.0.0/16]`
    );
  }
  const classes = rangeClasses(range);
  if (classes.includes("unspecified")) {
    return (
      `'${written}' holds an unspecified address (0.0.0.0/8 or ::), which dials this host ` +
      `itself; it is never a rule: name the service's own address (e.g. 127.0.0.1) instead`
    );
  }
  if (range.carried.some((r) => r.via === "teredo_client" || r.via === "teredo_server")) {
    return (
      `'${written}' is a Teredo address, which carries two IPv4 addresses ` +
      `(${describeCarried(range).join(", ")}): write the IPv4 address you mean`
    );
  }
  const size = rangeSize(range);
  const limit = size.family === 4 ? MAX_V4_PREFIX : MAX_V6_PREFIX;
  if (size.prefix < limit) {
    const carried = range.carried.length > 0 ? ` (it carries ${describeCarried(range).join(", ")})` : "";
    return (
      `'${written}'${carried} covers ${size.count} addresses; an address range may be at most /${limit} ` +
      `for IPv${size.family}: split it into /${limit} or narrower ranges, or name the addresses`
    );
  }
  if (!isSingleAddress(range)) {
    const bad = ONE_AT_A_TIME.filter((cls) => classes.includes(cls));
    if (bad.length > 0) {
      return (
        `'${written}' covers ${bad.map(human).join(" and ")} addresses; those are ` +
        `named one address at a time (e.g. http://127.0.0.1:8080), never inside a range`
      );
    }
  }
  return null;
}
