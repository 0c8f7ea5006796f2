/**
 * Domains whose every subdomain resolves wherever its name (or anyone) says:
 * a wildcard rule over one of them names no service, only "any address".
 *
 * - wildcard DNS: the answer is written in the name (`10.0.0.1.nip.io`,
 *   `10-0-0-1.sslip.io`), is always loopback (`x.localtest.me`), or alternates
 *   between two addresses per lookup (rebinding services);
 * - dynamic DNS: anyone may register a name under the domain and point it at
 *   any address, at any time.
 *
 * Many dynamic-DNS domains are also in the Public Suffix List and so already
 * too broad (`hostname.ts`); they are listed here as well, so the refusal
 * says what they are. The list is not complete — the address checks of the
 * judge (every answer classified; non-public needs a rule naming it) are the
 * defence, this list keeps rules honest about what they allow.
 */

/** Wildcard DNS: the name decides the answer. */
export const WILDCARD_DNS: readonly string[] = [
  "nip.io",
  "sslip.io",
  "xip.io",
  "nip.direct",
  "localtest.me",
  "lvh.me",
  "vcap.me",
  "traefik.me",
  "lacolhost.com",
  "localhost.direct",
  "local.gd",
  "1u.ms",
  "rbndr.us",
];

/** Dynamic DNS: anyone registers a name and points it anywhere. */
export const DYNAMIC_DNS: readonly string[] = [
  "duckdns.org",
  "no-ip.com",
  "no-ip.org",
  "no-ip.biz",
  "noip.me",
  "ddns.net",
  "hopto.org",
  "zapto.org",
  "sytes.net",
  "servebeer.com",
  "serveftp.com",
  "myftp.org",
  "dynu.net",
  "freeddns.org",
  "ddnsfree.com",
  "mooo.com",
  "afraid.org",
  "dyndns.org",
  "dynv6.net",
  "dedyn.io",
  "ydns.eu",
  "now-dns.com",
  "ddnss.de",
  "changeip.com",
  "dnsalias.com",
  "homeip.net",
];

/**
 * Why a wildcard over `suffix` (normalised, without `*.`) names no service,
 * or null. A wildcard at or under a listed domain is refused; an exact name
 * under one (`api.example.duckdns.org`) is a name like any other.
 */
export function wildcardDnsProblem(suffix: string): string | null {
  const under = (domain: string) => suffix === domain || suffix.endsWith(`.${domain}`);
  const wild = WILDCARD_DNS.find(under);
  if (wild !== undefined) {
    return (
      `'*.${suffix}' is under '${wild}', a wildcard-DNS domain whose names resolve to whatever address ` +
      `they spell (loopback and private ones included): name each host you need, or write an address rule`
    );
  }
  const dynamic = DYNAMIC_DNS.find(under);
  if (dynamic !== undefined) {
    return (
      `'*.${suffix}' is under '${dynamic}', a dynamic-DNS domain where anyone ` +
      `may register a name and point it anywhere: name each host you need`
    );
  }
  return null;
}
