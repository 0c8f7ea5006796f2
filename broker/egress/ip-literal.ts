/**
 * IP literals in URL hosts, read the way the WHATWG URL parser reads them
 * (every legacy IPv4 spelling included), so that a host the URL parser would
 * read as an IP is never mistaken for a name.
 */
import { InvalidAddressError, formatV4, formatV6, parseV6 } from "./ip-text.js";
import { domainToASCII } from "./node-builtins.js";

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
  if (value === null)
    throw new InvalidAddressError(`${JSON.stringify(host)} ends in a number but is not a valid IPv4 address`);
  return formatV4(value);
}
