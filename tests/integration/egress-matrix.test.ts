/**
 * The egress matrix: every decision the broker's `net.fetch` makes, against
 * real HTTP servers on loopback, through a real broker and a real jailed
 * satellite (the fixture tests/integration/fixtures/fetcher).
 *
 * - Test host names "resolve" through an injected resolver that counts calls.
 * - Every server records every request it receives, so a refused case can
 *   assert that it never reached one.
 * - Every case asserts the decision, the rule named in the extension's error
 *   message, and the `cap_audit` row (what `tether audit` shows).
 * - One broker and one install of each fixture variant serve every case;
 *   changing a layer (approval, operator policy, session policy, hook) must
 *   change the next call of the same satellite (its boot id is compared).
 *
 * The case table is `CASES`; docs/egress.md lists the same ids with their
 * reasoning, and the last tests check that every case recorded a verdict and
 * is documented. Cases marked `failing` are real bugs (see docs/egress.md,
 * "Known gaps"): each asserts the correct behaviour.
 */
import { urlWithoutValues } from "../../broker/egress/url-without-values.js";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import type { CapCallEvent, CapHookStage } from "../../broker/caps/dispatcher.js";
import type { Resolver } from "../../broker/egress/judge.js";
import { silentLogger } from "../../broker/base/log.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

// ---------------------------------------------------------------------------
// The case table
// ---------------------------------------------------------------------------

const CASES: ReadonlyArray<readonly [id: string, description: string]> = [
  ["E01-allowed-exact", "a URL under an exact host rule is fetched and reaches the server"],
  ["E02-allowed-prefix-itself", "the path prefix itself (/v1) is allowed"],
  ["E03-prefix-segment-boundary", "a path prefix matches on segment boundaries: /v10 is not under /v1"],
  ["E04-host-case-folded", "an upper-case host is the same name (API.Test)"],
  ["E05-method-get-allowed", "GET under a GET,HEAD rule is allowed"],
  ["E06-method-head-allowed", "HEAD under a GET,HEAD rule is allowed"],
  ["E07-method-post-refused", "POST under a GET,HEAD rule is refused"],
  ["E08-post-body-delivered", "a rule without methods allows POST, and the body arrives"],
  ["E09-wildcard-subdomain", "*.wild.test allows a name under it"],
  ["E10-wildcard-deep-subdomain", "*.wild.test allows a name several labels under it"],
  ["E11-wildcard-not-apex", "*.wild.test does not allow wild.test itself"],
  ["E12-ipv6-loopback-server", "a name resolving to ::1 reaches an IPv6 server when an address rule names [::1]"],
  [
    "E13-ip-rule-literal-encoding",
    "with a rule naming 127.0.0.1, the decimal spelling 2130706433 is that address and is allowed",
  ],
  ["E14-layer-no-manifest-rule", "a host no approved rule names is refused (manifest:no-match)"],
  [
    "E15-layer-approval-narrowed",
    "an approval narrowed with onlyNet refuses the next call; a plain re-approval keeps it narrowed, re-approving with all allows it again (same satellite)",
  ],
  [
    "E16-layer-operator-deny-url",
    "an operator deny rule refuses the next call; removing it allows it again (same satellite)",
  ],
  ["E17-layer-operator-deny-address", "an operator deny of an address range refuses a name resolving into it"],
  [
    "E18-layer-operator-no-private",
    "allow_private = false refuses a named loopback address; true allows it again (same satellite)",
  ],
  ["E19-layer-operator-policy-invalid", "an unreadable policy.toml refuses all egress; fixing it allows again"],
  ["E20-layer-session-offline", "an offline session refuses the next call; back online allows it (same satellite)"],
  ["E21-layer-session-allow-narrower", "a session allow list narrower than the approval refuses what it omits"],
  ["E22-layer-session-allow-cannot-widen", "a session allow list cannot add a host the approval lacks"],
  ["E23-layer-hook-block", "a cap_call hook block refuses the call with the hook's reason; audit rule hook:<by>"],
  ["E24-userinfo-host-at", "http://api.test@evil.test/ (userinfo naming an allowed host) is refused"],
  ["E25-userinfo-user-pass", "http://user:pass@api.test/ (credentials in the URL) is refused"],
  ["E26-backslash-authority", "http://evil.test\\@api.test/ is evil.test to the URL parser, and refused"],
  ["E27-scheme-file", "file: is refused"],
  ["E28-scheme-ftp", "ftp: is refused"],
  ["E29-scheme-data", "data: is refused"],
  ["E30-scheme-https-vs-http", "https: is refused by an http: rule"],
  ["E31-default-port-explicit-in-url", ":80 written in the URL equals the default port of an http rule"],
  ["E32-default-port-explicit-in-rule", ":80 written in the rule equals a URL with no port"],
  ["E33-other-port", "a port other than the rule's is refused"],
  ["E34-idn-alabel-rule-ulabel-url", "a rule in A-label form matches a U-label URL"],
  ["E35-idn-ulabel-rule-alabel-url", "a rule in U-label form matches an A-label URL"],
  ["E36-trailing-dot", "api.test. is api.test: allowed, resolved once as api.test"],
  ["E37-double-trailing-dot", "api.test.. (an empty label) is refused"],
  ["E38-ip-decimal", "2130706433 (127.0.0.1) with no rule naming it is refused"],
  ["E39-ip-hex", "0x7f000001 (127.0.0.1) with no rule naming it is refused"],
  ["E40-ip-octal", "0177.0.0.1 (127.0.0.1) with no rule naming it is refused"],
  ["E41-ip-short", "127.1 (127.0.0.1) with no rule naming it is refused"],
  ["E42-ip-unspecified", "0.0.0.0 (dials the local host) with no rule naming it is refused"],
  ["E43-ipv6-loopback-literal", "[::1] with no rule naming it is refused"],
  ["E44-ipv4-mapped-dotted", "[::ffff:127.0.0.1] with no rule naming it is refused"],
  ["E45-ipv4-mapped-hex", "[::ffff:7f00:1] with no rule naming it is refused"],
  ["E46-nat64-literal", "NAT64 [64:ff9b::7f00:1] with no rule naming it is refused"],
  ["E47-dns-loopback", "a name resolving to 127.0.0.1 with no rule naming it is refused (address:loopback)"],
  ["E48-dns-loopback-v6", "a name resolving to ::1 is refused (address:loopback)"],
  ["E49-dns-private", "a name resolving to 10.0.0.1 is refused (address:private)"],
  ["E50-dns-unique-local-v6", "a name resolving to fd00::1 is refused (address:private)"],
  ["E51-dns-link-local", "a name resolving to 169.254.1.1 is refused (address:link_local)"],
  ["E52-dns-cgnat", "a name resolving to 100.64.0.1 is refused (address:cgnat)"],
  ["E53-dns-metadata", "a name resolving to 169.254.169.254 is refused (address:metadata)"],
  ["E54-dns-unspecified", "a name resolving to 0.0.0.0 is refused (address:unspecified)"],
  ["E55-dns-mapped-loopback", "a name resolving to ::ffff:127.0.0.1 is refused (address:loopback)"],
  ["E56-dns-mixed-public-private", "a name whose answers mix a public and a private address is refused"],
  [
    "E57-dns-rebind-judged-address-connected",
    "rebinding: the connection goes to the judged answer, with exactly one lookup",
  ],
  [
    "E58-dns-rebind-next-lookup-refused",
    "rebinding: the next call's lookup answers 127.0.0.2, judged and refused, one lookup",
  ],
  ["E59-dns-no-answer", "a name that does not resolve is refused (dns)"],
  ["E60-redirect-allowed-followed", "a redirect from an allowed URL to another allowed URL is followed"],
  [
    "E61-redirect-disallowed-host",
    "a redirect to a disallowed host is refused at that hop; the target is never reached",
  ],
  ["E62-redirect-metadata", "a redirect to http://169.254.169.254/ is refused"],
  ["E63-redirect-file", "a redirect to file:///etc/passwd is refused"],
  ["E64-redirect-loop-bounded", "a redirect loop stops after max_redirects (limit:redirects)"],
  [
    "E65-redirect-credentials-cross-origin-stripped",
    "authorization and cookie are dropped when a redirect crosses origins",
  ],
  ["E66-redirect-credentials-same-origin-kept", "authorization and cookie are kept on a same-origin redirect"],
  ["E67-redirect-303-post-becomes-get", "a 303 after POST is followed with GET and no body"],
  ["E68-redirect-userinfo", "a redirect whose Location carries credentials (user:pass@) is refused at that hop"],
  ["E69-body-cap", "a body over max_body_bytes is refused (limit:body); one under it is delivered"],
  ["E70-slow-server-deadline", "a server that never answers is cut off by the invocation's deadline, bounded"],
  [
    "E71-hop-by-hop-headers-stripped",
    "proxy-authorization, connection, host and other hop-by-hop headers are not forwarded",
  ],
  ["E72-proxy-env-ignored", "HTTP_PROXY / HTTPS_PROXY / ALL_PROXY in the broker's environment are not honoured"],
  ["E73-no-cookie-jar", "a cookie set by a server is not sent on the next invocation"],
  ["E74-crlf-header-dropped", "a header value carrying CR/LF is dropped, not injected"],
  ["E75-encoded-slash", "/v1%2F..%2Fadmin is refused by the /v1 rule"],
  ["E76-dot-segments", "/v1/../admin is normalised to /admin and refused"],
  ["E77-encoded-dot-segments", "/v1/%2e%2e/admin is normalised to /admin and refused"],
  ["E78-backslash-dot-segments", "/v1\\..\\admin is normalised to /admin and refused"],
  [
    "E79-address-rule-is-not-a-name-rule",
    "KNOWN BUG: an IP rule does not allow an unnamed host that resolves to its address",
  ],
  [
    "E80-address-rule-does-not-cover-apex",
    "KNOWN BUG: with an address rule beside *.wild.test, wild.test is still refused",
  ],
  ["E81-hook-judges-redirect-hops", "KNOWN BUG: the cap_call hook stage judges every redirect hop"],
  ["E82-every-hop-audited", "KNOWN BUG: every allowed hop of a redirect chain is an audit row"],
  ["E83-revoked-approval-cuts-egress", "a revocation refuses the next net.fetch of the running satellite"],
  [
    "E84-revoked-mid-chain",
    "a revocation while a redirect hop is on the wire cuts it off (withdrawn); the next hop is never sent",
  ],
  [
    "E85-narrowed-mid-chain",
    "an approval narrowed while a redirect hop is on the wire refuses the next hop, judged when it is sent",
  ],
  [
    "E86-offline-mid-chain",
    "a session taken offline while a hop is on the wire cuts it off at once (withdrawn:session:offline)",
  ],
  [
    "E87-operator-deny-mid-chain",
    "an operator deny added to policy.toml while a hop is on the wire refuses the next hop",
  ],
  [
    "E88-body-cut-mid-stream",
    "a body still streaming is cut off when the session goes offline; the extension gets no body",
  ],
  [
    "E89-hook-sees-judged-request",
    "cap_call hooks see the judged request: normal-form host, port, path, the rule, resolved addresses with classes, no query values",
  ],
  ["E90-hook-not-asked-when-refused", "a request the policy refuses is never shown to the hooks"],
  ["E91-redirect-body-closed", "a redirect's body is not drained: its connection is closed at once"],
  [
    "E92-concurrent-fetches-bounded",
    "one invocation's concurrent fetches are bounded by [limits] fetches (default 4); the rest wait their turn and all are served",
  ],
  [
    "E93-request-body-bounded",
    "a request body over max_request_bytes is refused before it is decoded, with one audit row",
  ],
  [
    "E95-fetch-burst-bounded",
    "a burst of fetches from six invocations of one extension holds at most 16 on the wire (the extension's bound); broker descriptors stay bounded and another extension is served meanwhile",
  ],
  [
    "E96-operator-fetch-ceiling",
    "the operator's max_fetches is a ceiling on [limits] fetches: with max_fetches = 2, at most 2 of an invocation's fetches are on the wire",
  ],
  [
    "E94-large-request-body-delivered",
    "a 3.5 MiB request body under the bound is delivered, with one audit row (no stack overflow in validation)",
  ],
  [
    "E100-rule-unspecified-refused",
    "an allow rule naming an unspecified address (0.0.0.0, ::, 0.0.0.0/8, ::ffff:0.0.0.0) is an install error",
  ],
  [
    "E101-rule-every-ipv4-refused",
    "an allow range reaching every IPv4 address through an embedding ([::ffff:0:0/96], [::/1], [64:ff9b::/96], [2002::/16]) is an install error",
  ],
  [
    "E102-rule-range-size-limited",
    "an allow range wider than /16 (IPv4, measured on the embedded IPv4 for NAT64/6to4/mapped forms) or /48 (IPv6) is an install error; a /16 installs",
  ],
  [
    "E103-rule-disguised-address-refused",
    "an allow rule spelling an IPv4 address another way (2852039166, 0xa9fea9fe, octal, short) is an install error saying how to write it",
  ],
  [
    "E104-rule-range-over-loopback-link-local-metadata-refused",
    "an allow range touching loopback, link-local or metadata addresses is an install error",
  ],
  [
    "E105-rule-wildcard-dns-refused",
    "a wildcard over a wildcard-DNS or dynamic-DNS domain (*.nip.io, *.sslip.io, *.duckdns.org) is an install error",
  ],
  [
    "E106-review-decodes-rules",
    "tether review shows each rule decoded: canonical URL, and for address rules the size and the classes touched",
  ],
  [
    "E107-reach-per-class",
    'reach = ["private"] does not reach loopback (operator:no-private, saying what to add); reach = ["loopback"] does (same satellite)',
  ],
  [
    "E108-metadata-needs-operator-listing",
    "a rule naming 169.254.169.254 exactly installs, but allow_private or every reach class does not reach it (operator:no-metadata)",
  ],
  [
    "E109-policy-reach-validated",
    "policy.toml with an unknown reach class or a non-metadata [net] metadata entry refuses all egress, saying what is wrong",
  ],
  [
    "E115-deny-v4-matches-nat64",
    "an operator deny of 127.0.0.0/8 refuses an answer 64:ff9b::7f00:1 (NAT64 well-known prefix)",
  ],
  [
    "E116-deny-v4-matches-nat64-local",
    "an operator deny of 127.0.0.0/8 refuses an answer 64:ff9b:1::7f00:1 (NAT64 local-use prefix)",
  ],
  ["E117-deny-v4-matches-6to4", "an operator deny of 127.0.0.0/8 refuses an answer 2002:7f00:1::1 (6to4)"],
  ["E118-deny-v4-matches-teredo", "an operator deny of 127.0.0.0/8 refuses a Teredo answer whose client is 127.0.0.1"],
  ["E119-deny-v4-matches-compatible", "an operator deny of 127.0.0.0/8 refuses an answer ::7f00:1 (IPv4-compatible)"],
  [
    "E120-deny-v4-matches-translated",
    "an operator deny of 127.0.0.0/8 refuses an answer ::ffff:0:7f00:1 (IPv4-translated)",
  ],
  [
    "E121-allow-rule-names-every-embedding",
    "a rule naming 127.0.0.1 names that address in every embedding: each form gets past the rules to the operator's loopback switch",
  ],
  [
    "E122-deny-written-in-nat64-form",
    "an operator deny written as [64:ff9b::7f00:0/104] refuses the plain answer 127.0.0.1",
  ],
  ["E130-path-params", "/v1/..;/admin (a path parameter some servers strip) is refused by the /v1 rule, naming it"],
  ["E131-path-double-encoded-dots", "/v1/%252e%252e/admin is refused by the /v1 rule, naming it"],
  ["E132-path-triple-encoded-dots", "/v1/%25252e%25252e/admin is refused by the /v1 rule, naming it"],
  ["E133-path-overlong-utf8", "/v1/%c0%ae%c0%ae/admin (overlong UTF-8 dots) is refused by the /v1 rule, naming it"],
  ["E134-path-double-encoded-backslash", "/v1/..%255c..%255cadmin is refused by the /v1 rule, naming it"],
  [
    "E135-path-plain-still-allowed",
    "plain paths (/v1/a-b_c~d, /v1/%41, /v1/caf%C3%A9) are still allowed and reach the server as sent",
  ],
  ["E136-get-body-refused", "a GET with a body is refused (request:body), not sent without it"],
  ["E137-head-body-refused", "a HEAD with a body is refused (request:body)"],
  ["E138-options-body-refused", "an OPTIONS with a body is refused (request:body)"],
  [
    "E139-method-override-header-refused",
    "X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override naming DELETE under a GET,HEAD rule are refused",
  ],
  [
    "E140-method-override-allowed-method-refused",
    "an override header naming a method the rule allows (GET) is refused too",
  ],
  ["E141-url-override-header-refused", "X-Original-URL / X-Rewrite-URL naming another path are refused"],
  ["E142-method-override-query-refused", "a _method query parameter (POST read as DELETE) is refused"],
  [
    "E143-operator-deny-prefix-unsafe-path",
    "an operator deny of /admin on a host-wide approved rule also denies /x/..;/admin and /x/%252e%252e/admin",
  ],
];

const DESCRIPTION = new Map(CASES);
/** What each case observed (every call's decision and audit rows, in order), for the completeness check. */
const verdicts = new Map<string, string>();
let currentCase = "";

function matrix(id: string, fn: () => Promise<void>, options: { failing?: boolean } = {}): void {
  const description = DESCRIPTION.get(id);
  if (description === undefined) throw new Error(`case ${id} is not in CASES`);
  const register = options.failing ? test.failing : test;
  register(`${id}: ${description}`, async () => {
    currentCase = id;
    try {
      await fn();
    } finally {
      currentCase = "";
    }
  });
}

// ---------------------------------------------------------------------------
// Loopback servers that record every request
// ---------------------------------------------------------------------------

interface Hit {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

interface TestServer {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly server: Server;
  readonly hits: Hit[];
  readonly held: ServerResponse[];
}

/**
 * Routes (any prefix): `…/redirect?to=URL&status=302`, `…/loop` (redirects to
 * itself), `…/slow` (never answers), `?size=N` (N bytes), `…/setcookie`;
 * anything else echoes {server, method, path, headers, body} as JSON.
 */
async function startServer(name: string, host: string, port = 0): Promise<TestServer | null> {
  const hits: Hit[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      hits.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
      const u = new URL(req.url ?? "/", "http://placeholder");
      const to = u.searchParams.get("to");
      if (u.pathname.endsWith("/redirect") && to !== null) {
        res.writeHead(Number(u.searchParams.get("status") ?? "302"), { location: to });
        res.end();
        return;
      }
      if (u.pathname.endsWith("/loop")) {
        res.writeHead(302, { location: u.pathname });
        res.end();
        return;
      }
      if (u.pathname.endsWith("/slow")) {
        held.push(res);
        return;
      }
      const size = u.searchParams.get("size");
      if (size !== null) {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("x".repeat(Number(size)));
        return;
      }
      const extra: Record<string, string> = u.pathname.endsWith("/setcookie")
        ? { "set-cookie": "sid=s3cret; Path=/" }
        : {};
      res.writeHead(200, { "content-type": "application/json", ...extra });
      res.end(JSON.stringify({ server: name, method: req.method, path: req.url, headers: req.headers, body }));
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
  } catch {
    return null;
  }
  return { name, host, port: (server.address() as AddressInfo).port, server, hits, held };
}

async function stopServer(s: TestServer | null): Promise<void> {
  if (s === null) return;
  for (const res of s.held) res.destroy();
  s.server.closeAllConnections();
  await new Promise<void>((resolve) => s.server.close(() => resolve()));
}

// ---------------------------------------------------------------------------
// The injected resolver
// ---------------------------------------------------------------------------

type Answers = ReadonlyArray<{ address: string; family: 4 | 6 }>;
const v4 = (address: string) => ({ address, family: 4 as const });
const v6 = (address: string) => ({ address, family: 6 as const });

/** name → answers, or a function of the how-many-th lookup of that name (1-based). */
const zone = new Map<string, Answers | ((n: number) => Answers)>();
const lookups = new Map<string, number>();

const resolve: Resolver = async (name) => {
  const n = (lookups.get(name) ?? 0) + 1;
  lookups.set(name, n);
  const entry = zone.get(name);
  if (entry === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
  return typeof entry === "function" ? entry(n) : entry;
};

// ---------------------------------------------------------------------------
// The broker, the fixture variants, and the call helper
// ---------------------------------------------------------------------------

let tmp: string;
let broker: Broker;
let hook: CapHookStage = async () => null;
const hookEvents: CapCallEvent[] = [];

let api: TestServer; // 127.0.0.1:P1 — reached by name through rules with address twins
let rebindTarget: TestServer | null; // 127.0.0.2:P1 — must never be reached
let other: TestServer; // 127.0.0.1:P2
let proxy: TestServer; // 127.0.0.1:P3 — a "proxy" named in HTTP_PROXY
let hostOnly: TestServer; // 127.0.0.1:P4 — name rules only, no address rule
let stray: TestServer; // 127.0.0.1:P5 — no rule at all
let ipv6: TestServer | null; // [::1]:P6
let port80: TestServer | null; // 127.0.0.1:80, when it can be had

const MAIN = "fetcher";
/** The same rules as MAIN, for cases that revoke or narrow mid-exchange (MAIN's satellite must live on). */
const LIVE = "fetcher-live";
const NAMES = "fetcher-names";
let mainRules: string[] = [];

const BASE_POLICY = "[net]\nallow_private = true\nmax_redirects = 3\nmax_body_bytes = 65536\n";
let policyWrites = 0;

/** Writes policy.toml with a fresh mtime (the broker re-reads it when the mtime changes). */
function writePolicy(text: string): void {
  const file = join(broker.home, "policy.toml");
  writeFileSync(file, text);
  policyWrites += 1;
  const at = new Date(Date.UTC(2030, 0, 1) + policyWrites * 1000);
  utimesSync(file, at, at);
}

/** Copies the fixture under another name with other `[net] allow` rules, into a temp folder. */
function writeVariant(name: string, rules: readonly string[]): string {
  const dir = join(tmp, "src", name);
  mkdirSync(join(tmp, "src"), { recursive: true });
  cpSync(join(REPO, "tests/integration/fixtures/fetcher"), dir, { recursive: true });
  const file = join(dir, "manifest.toml");
  const original = readFileSync(file, "utf8");
  const text = original
    .replace(/^name = "fetcher"$/m, `name = ${JSON.stringify(name)}`)
    .replace(/^allow = \[[\s\S]*?^\]$/m, `allow = [\n${rules.map((r) => `  ${JSON.stringify(r)},`).join("\n")}\n]`);
  if (text === original && name !== "fetcher") throw new Error("the fixture manifest did not take the variant");
  writeFileSync(file, text);
  return dir;
}

interface FetchArgs {
  readonly url: string;
  readonly method?: string;
  readonly headers?: Record<string, string> | ReadonlyArray<readonly [string, string]>;
  readonly body?: string;
}

interface FetchReply {
  readonly ok: boolean;
  readonly status?: number;
  readonly url?: string;
  readonly body?: string;
  readonly headers?: Array<[string, string]>;
  readonly code?: string;
  readonly message?: string;
  readonly boot: string;
  readonly n: number;
}

interface AuditRow {
  readonly id: number;
  readonly session_id: string;
  readonly extension: string;
  readonly capability: string;
  readonly target: string;
  readonly decision: "allowed" | "denied";
  readonly rule: string;
  readonly bytes: number;
}

interface Called {
  /** The fixture's JSON block, or null when the invocation itself failed (timeout, crash). */
  readonly reply: FetchReply | null;
  readonly outcome: Awaited<ReturnType<Broker["callTool"]>>;
  /** The net.fetch audit rows this call wrote. */
  readonly rows: AuditRow[];
}

function lastAuditId(): number {
  broker.ledger.flush();
  const row = broker.store.sqlite.prepare("select coalesce(max(id), 0) as id from cap_audit").get() as { id: number };
  return row.id;
}

async function call(args: FetchArgs, options: { ext?: string; session?: string; tool?: string } = {}): Promise<Called> {
  const before = lastAuditId();
  const outcome = await broker.callTool(options.ext ?? MAIN, options.tool ?? "fetch", JSON.stringify(args), {
    session: options.session ?? "default",
  });
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select * from cap_audit where id > ? and capability = 'net.fetch' order by id")
    .all(before) as AuditRow[];
  let reply: FetchReply | null = null;
  if (outcome.ok) {
    const content = outcome.value.content;
    reply = (content.find((c) => c.type === "json")?.json ?? null) as FetchReply | null;
  }
  if (currentCase !== "") {
    const seen =
      reply === null
        ? `invocation ${outcome.ok ? "ok" : outcome.error.code}`
        : reply.ok
          ? `allowed ${reply.status}`
          : `${reply.code}`;
    const audit = rows.map((r) => `${r.decision} ${r.rule}`).join("; ");
    const earlier = verdicts.get(currentCase);
    verdicts.set(currentCase, `${earlier === undefined ? "" : `${earlier} → `}${seen} [${audit}]`);
  }
  return { reply, outcome, rows };
}

/** The request paths a server received since `since` (an index into its hits). */
const newHits = (s: TestServer | null, since: number): Hit[] => (s === null ? [] : s.hits.slice(since));
const mark = (...servers: Array<TestServer | null>): number[] => servers.map((s) => (s === null ? 0 : s.hits.length));

/**
 * The audit row of the call's final decision. A single request writes exactly
 * one row; a redirect chain (`chain`) may also hold rows for its earlier hops,
 * which must all be allowed (today only the final hop is written: see E82).
 */
function finalRow(c: Called, chain: boolean): AuditRow {
  if (!chain) expect(c.rows).toHaveLength(1);
  expect(c.rows.length).toBeGreaterThanOrEqual(1);
  for (const earlier of c.rows.slice(0, -1)) expect(earlier.decision).toBe("allowed");
  return c.rows.at(-1)!;
}

function expectAllowed(c: Called, rule: string, target?: string, options: { chain?: boolean } = {}): FetchReply {
  expect(c.reply).toMatchObject({ ok: true });
  const row = finalRow(c, options.chain ?? false);
  expect([row.decision, row.rule]).toEqual(["allowed", rule]);
  if (target !== undefined) expect(row.target).toBe(urlWithoutValues(target));
  expect(row.bytes).toBe(Buffer.byteLength(c.reply!.body ?? ""));
  return c.reply!;
}

function expectDenied(c: Called, rule: string, ...messageParts: string[]): FetchReply {
  return expectDeniedRow(c, rule, false, messageParts);
}

/** A refusal at a redirect hop: earlier hops may have allowed rows. */
function expectDeniedHop(c: Called, rule: string, ...messageParts: string[]): FetchReply {
  return expectDeniedRow(c, rule, true, messageParts);
}

function expectDeniedRow(c: Called, rule: string, chain: boolean, messageParts: readonly string[]): FetchReply {
  expect(c.reply).toMatchObject({ ok: false, code: "denied" });
  const message = c.reply!.message ?? "";
  expect(message).toContain(`(rule: ${rule})`);
  for (const part of messageParts) expect(message).toContain(part);
  const row = finalRow(c, chain);
  expect([row.decision, row.rule]).toEqual(["denied", rule]);
  return c.reply!;
}

/** The echo server's view of the request (its JSON body). */
function echoed(reply: FetchReply): {
  server: string;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
} {
  return JSON.parse(reply.body ?? "null") as ReturnType<typeof echoed>;
}

let P1 = 0;
let P2 = 0;
let P4 = 0;
let P5 = 0;
let P6 = 0;
let mainBoot = "";

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-egress-"));
  api = (await startServer("api", "127.0.0.1"))!;
  P1 = api.port;
  rebindTarget = await startServer("rebind-target", "127.0.0.2", P1);
  other = (await startServer("other", "127.0.0.1"))!;
  P2 = other.port;
  proxy = (await startServer("proxy", "127.0.0.1"))!;
  hostOnly = (await startServer("host-only", "127.0.0.1"))!;
  P4 = hostOnly.port;
  stray = (await startServer("stray", "127.0.0.1"))!;
  P5 = stray.port;
  ipv6 = await startServer("ipv6", "::1");
  P6 = ipv6?.port ?? 0;
  port80 = await startServer("port80", "127.0.0.1", 80);

  const local = v4("127.0.0.1");
  for (const name of [
    "api.test",
    "other.test",
    "evil.test",
    "wild.test",
    "sub.wild.test",
    "a.b.wild.test",
    "xn--bcher-kva.test",
    "xn--mnchen-3ya.test",
    "port80.test",
    "port80b.test",
  ]) {
    zone.set(name, [local]);
  }
  zone.set("v6.test", [v6("::1")]);
  zone.set("rebind.test", (n) => (n === 1 ? [local] : [v4("127.0.0.2")]));
  zone.set("lo.dns.test", [local]);
  zone.set("lo6.dns.test", [v6("::1")]);
  zone.set("priv.dns.test", [v4("10.0.0.1")]);
  zone.set("ula.dns.test", [v6("fd00::1")]);
  zone.set("ll.dns.test", [v4("169.254.1.1")]);
  zone.set("cgnat.dns.test", [v4("100.64.0.1")]);
  zone.set("meta.dns.test", [v4("169.254.169.254")]);
  zone.set("zero.dns.test", [v4("0.0.0.0")]);
  zone.set("mapped.dns.test", [v6("::ffff:127.0.0.1")]);
  zone.set("mixed.dns.test", [v4("93.184.216.34"), v4("10.0.0.1")]);
  zone.set("empty.dns.test", []);
  // 127.0.0.1 carried in each IPv6 form the classifier knows (E115–E120).
  zone.set("nat64.dns.test", [v6("64:ff9b::7f00:1")]);
  zone.set("nat64l.dns.test", [v6("64:ff9b:1:2a::7f00:1")]);
  zone.set("6to4.dns.test", [v6("2002:7f00:1::1")]);
  zone.set("teredo.dns.test", [v6("2001:0:4136:e378:8000:63bf:80ff:fffe")]);
  zone.set("compat.dns.test", [v6("::7f00:1")]);
  zone.set("xlat.dns.test", [v6("::ffff:0:7f00:1")]);

  // Name rules first (so an allowed call's audit row names the name rule), then
  // their address twins: the same methods, port and path, naming 127.0.0.1 so
  // that the names may reach the loopback servers at all.
  const named = [
    `http://api.test:${P1}/v1`,
    `GET,HEAD http://api.test:${P1}/ro`,
    `http://*.wild.test:${P1}/w`,
    `http://rebind.test:${P1}/r`,
    `http://xn--bcher-kva.test:${P1}/idn`,
    `http://münchen.test:${P1}/idn`,
    `http://other.test:${P2}`,
    `http://*.wild.test:${P4}`,
    `http://port80.test/p`,
    `http://port80b.test:80/q`,
  ];
  const twins = [
    `http://127.0.0.1:${P1}/v1`,
    `GET,HEAD http://127.0.0.1:${P1}/ro`,
    `http://127.0.0.1:${P1}/w`,
    `http://127.0.0.1:${P1}/r`,
    `http://127.0.0.1:${P1}/idn`,
    `http://127.0.0.1:${P2}`,
    `http://127.0.0.1/p`,
    `http://127.0.0.1:80/q`,
  ];
  if (ipv6 !== null) {
    named.push(`http://v6.test:${P6}`);
    twins.push(`http://[::1]:${P6}`);
  }
  mainRules = [...named, ...twins];

  broker = Broker.open({
    ...envOptions(),
    home: join(tmp, "home"),
    resolve,
    log: silentLogger,
    capHooks: (event) => (hookEvents.push(event), hook(event)),
  });
  writePolicy(BASE_POLICY);
  await broker.registry.install(writeVariant(MAIN, mainRules));
  broker.registry.approve(MAIN);
  // No address rule at all: loopback is unreachable, whatever the spelling.
  await broker.registry.install(writeVariant(LIVE, mainRules));
  broker.registry.approve(LIVE);
  await broker.registry.install(writeVariant(NAMES, [`http://api.test:${P1}/v1`, `http://*.dns.test:${P1}`]));
  broker.registry.approve(NAMES);
}, 60_000);

afterAll(async () => {
  if (process.env.EGRESS_MATRIX_REPORT) {
    writeFileSync(
      process.env.EGRESS_MATRIX_REPORT,
      `${CASES.map(([id]) => `${id}\t${verdicts.get(id) ?? "(none)"}`).join("\n")}\n`,
    );
  }
  await broker?.destroy();
  await Promise.all([api, rebindTarget, other, proxy, hostOnly, stray, ipv6, port80].map((s) => stopServer(s ?? null)));
  rmSync(tmp, { recursive: true, force: true });
});

afterEach(() => {
  hook = async () => null;
});

// ---------------------------------------------------------------------------
// Allowed calls
// ---------------------------------------------------------------------------

describe("allowed calls and what a rule covers", () => {
  matrix("E01-allowed-exact", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/v1/echo?q=1` });
    const reply = expectAllowed(c, `http://api.test:${P1}/v1`, `http://api.test:${P1}/v1/echo?q=1`);
    expect(reply).toMatchObject({ status: 200, url: `http://api.test:${P1}/v1/echo?q=1` });
    expect(echoed(reply)).toMatchObject({ server: "api", method: "GET", path: "/v1/echo?q=1" });
    expect(newHits(api, a!).map((h) => h.path)).toEqual(["/v1/echo?q=1"]);
    expect(echoed(reply).headers.host).toBe(`api.test:${P1}`);
    mainBoot = reply.boot;
  });

  matrix("E02-allowed-prefix-itself", async () => {
    const c = await call({ url: `http://api.test:${P1}/v1` });
    expect(echoed(expectAllowed(c, `http://api.test:${P1}/v1`)).path).toBe("/v1");
  });

  matrix("E03-prefix-segment-boundary", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/v10/echo` });
    expectDenied(c, "manifest:no-match", `no approved rule of 'fetcher' allows GET http://api.test:${P1}/v10/echo`);
    expect(c.rows[0]!.target).toBe(`http://api.test:${P1}/v10/echo`);
    expect(newHits(api, a!)).toEqual([]);
  });

  matrix("E04-host-case-folded", async () => {
    const c = await call({ url: `http://API.Test:${P1}/v1/echo` });
    expectAllowed(c, `http://api.test:${P1}/v1`, `http://api.test:${P1}/v1/echo`);
  });

  matrix("E05-method-get-allowed", async () => {
    const c = await call({ url: `http://api.test:${P1}/ro/item`, method: "GET" });
    expect(echoed(expectAllowed(c, `GET,HEAD http://api.test:${P1}/ro`)).method).toBe("GET");
  });

  matrix("E06-method-head-allowed", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/ro/item`, method: "HEAD" });
    expect(expectAllowed(c, `GET,HEAD http://api.test:${P1}/ro`).status).toBe(200);
    expect(newHits(api, a!).map((h) => h.method)).toEqual(["HEAD"]);
  });

  matrix("E07-method-post-refused", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/ro/item`, method: "POST", body: "x" });
    expectDenied(c, "manifest:no-match", `allows POST http://api.test:${P1}/ro/item`);
    expect(newHits(api, a!)).toEqual([]);
  });

  matrix("E08-post-body-delivered", async () => {
    const c = await call({
      url: `http://api.test:${P1}/v1/echo`,
      method: "post",
      headers: { "content-type": "text/plain" },
      body: "hello body",
    });
    expect(echoed(expectAllowed(c, `http://api.test:${P1}/v1`))).toMatchObject({ method: "POST", body: "hello body" });
  });

  matrix("E09-wildcard-subdomain", async () => {
    const c = await call({ url: `http://sub.wild.test:${P1}/w/x` });
    expect(echoed(expectAllowed(c, `http://*.wild.test:${P1}/w`)).headers.host).toBe(`sub.wild.test:${P1}`);
  });

  matrix("E10-wildcard-deep-subdomain", async () => {
    const c = await call({ url: `http://a.b.wild.test:${P1}/w/x` });
    expectAllowed(c, `http://*.wild.test:${P1}/w`);
  });

  matrix("E11-wildcard-not-apex", async () => {
    // On P4 the only rule is `*.wild.test:P4` (no address rule), so the name
    // rule alone decides: a name under it gets past the rules and is then
    // refused for its loopback address; the apex never matches a rule.
    const [h] = mark(hostOnly);
    const under = await call({ url: `http://sub.wild.test:${P4}/` });
    expectDenied(under, "address:loopback", `sub.wild.test resolves to 127.0.0.1, a loopback address`);
    const apex = await call({ url: `http://wild.test:${P4}/` });
    expectDenied(apex, "manifest:no-match", `allows GET http://wild.test:${P4}/`);
    expect(newHits(hostOnly, h!)).toEqual([]);
  });

  matrix("E12-ipv6-loopback-server", async () => {
    if (ipv6 === null) {
      verdicts.set("E12-ipv6-loopback-server", "skipped: ::1 is not available here");
      return;
    }
    const [s] = mark(ipv6);
    const c = await call({ url: `http://v6.test:${P6}/six` });
    expect(echoed(expectAllowed(c, `http://v6.test:${P6}`)).server).toBe("ipv6");
    expect(newHits(ipv6, s!)).toHaveLength(1);
  });

  matrix("E13-ip-rule-literal-encoding", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://2130706433:${P1}/v1/echo` });
    const reply = expectAllowed(c, `http://127.0.0.1:${P1}/v1`, `http://127.0.0.1:${P1}/v1/echo`);
    expect(reply.url).toBe(`http://127.0.0.1:${P1}/v1/echo`);
    expect(newHits(api, a!)).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------
// Each layer of the composition, and changing it for the next call
// ---------------------------------------------------------------------------

describe("the composition: approval ∩ operator ∩ session ∩ hook, read at every call", () => {
  const allowedUrl = () => `http://api.test:${P1}/v1/echo`;
  const allowedRule = () => `http://api.test:${P1}/v1`;

  matrix("E14-layer-no-manifest-rule", async () => {
    const [h] = mark(hostOnly);
    const c = await call({ url: `http://evil.test:${P4}/steal` });
    expectDenied(c, "manifest:no-match", `no approved rule of 'fetcher' allows GET http://evil.test:${P4}/steal`);
    expect(newHits(hostOnly, h!)).toEqual([]);
    expect(lookups.get("evil.test") ?? 0).toBe(0); // refused before any lookup
  });

  matrix("E15-layer-approval-narrowed", async () => {
    const first = expectAllowed(await call({ url: allowedUrl() }), allowedRule());
    const installedAt = broker.store.sqlite.prepare("select updated_at from installs where name = ?").get(MAIN);
    broker.registry.approve(MAIN, { onlyNet: mainRules.filter((r) => !r.endsWith(`:${P1}/v1`)) });
    const [a] = mark(api);
    const narrowed = await call({ url: allowedUrl() });
    expectDenied(narrowed, "manifest:no-match", `no approved rule of 'fetcher' allows GET ${allowedUrl()}`);
    expect(newHits(api, a!)).toEqual([]);
    // Other approved rules still work on the same satellite.
    expectAllowed(await call({ url: `http://other.test:${P2}/x` }), `http://other.test:${P2}`);
    // A plain re-approval keeps the narrowing; widening back is explicit.
    expect(broker.registry.approve(MAIN).grants.net).not.toContain(allowedRule());
    broker.registry.approve(MAIN, { all: true });
    const again = expectAllowed(await call({ url: allowedUrl() }), allowedRule());
    expect(narrowed.reply!.boot).toBe(first.boot);
    expect(again.boot).toBe(first.boot);
    expect(again.n).toBeGreaterThan(first.n);
    expect(broker.store.sqlite.prepare("select updated_at from installs where name = ?").get(MAIN)).toEqual(
      installedAt,
    ); // no reinstall
  });

  matrix("E16-layer-operator-deny-url", async () => {
    const before = expectAllowed(await call({ url: `http://api.test:${P1}/v1/admin` }), allowedRule());
    writePolicy(`${BASE_POLICY}deny = ["http://api.test:${P1}/v1/admin"]\n`);
    const [a] = mark(api);
    const denied = await call({ url: `http://api.test:${P1}/v1/admin/users` });
    expectDenied(
      denied,
      `operator:deny http://api.test:${P1}/v1/admin`,
      `the operator's policy denies http://api.test:${P1}/v1/admin/users`,
    );
    expect(newHits(api, a!)).toEqual([]);
    expectAllowed(await call({ url: allowedUrl() }), allowedRule()); // the rest of /v1 is untouched
    writePolicy(BASE_POLICY);
    const after = expectAllowed(await call({ url: `http://api.test:${P1}/v1/admin` }), allowedRule());
    expect([denied.reply!.boot, after.boot]).toEqual([before.boot, before.boot]);
  });

  matrix("E17-layer-operator-deny-address", async () => {
    writePolicy(`${BASE_POLICY}deny = ["http://[127.0.0.0/8]"]\n`);
    const [a] = mark(api);
    try {
      const c = await call({ url: allowedUrl() });
      expectDenied(c, "operator:deny http://[127.0.0.0/8]", "the operator's policy denies address 127.0.0.1");
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      writePolicy(BASE_POLICY);
    }
    expectAllowed(await call({ url: allowedUrl() }), allowedRule());
  });

  matrix("E18-layer-operator-no-private", async () => {
    const before = expectAllowed(await call({ url: allowedUrl() }), allowedRule());
    writePolicy(BASE_POLICY.replace("allow_private = true", "allow_private = false"));
    const [a] = mark(api);
    try {
      const c = await call({ url: allowedUrl() });
      expectDenied(c, "operator:no-private", "the operator's policy forbids loopback addresses (127.0.0.1)");
      expect(c.reply!.boot).toBe(before.boot);
      // The literal form is refused the same way.
      expectDenied(await call({ url: `http://127.0.0.1:${P1}/v1/x` }), "operator:no-private");
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      writePolicy(BASE_POLICY);
    }
    expect(expectAllowed(await call({ url: allowedUrl() }), allowedRule()).boot).toBe(before.boot);
  });

  matrix("E19-layer-operator-policy-invalid", async () => {
    writePolicy("[net\nallow_private = ");
    const [a] = mark(api);
    try {
      const c = await call({ url: allowedUrl() });
      expectDenied(
        c,
        "operator:policy-invalid",
        "The operator policy cannot be read, so all egress is refused",
        "policy.toml",
      );
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      writePolicy(BASE_POLICY);
    }
    expectAllowed(await call({ url: allowedUrl() }), allowedRule());
  });

  matrix("E20-layer-session-offline", async () => {
    const before = expectAllowed(await call({ url: allowedUrl() }), allowedRule());
    broker.setSessionPolicy("default", { offline: true });
    const [a] = mark(api);
    try {
      const c = await call({ url: allowedUrl() });
      expectDenied(c, "session:offline", "this session is offline: no egress");
      expect(c.rows[0]!.session_id).toBe("default");
      expect(c.reply!.boot).toBe(before.boot);
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      broker.setSessionPolicy("default", {});
    }
    expect(expectAllowed(await call({ url: allowedUrl() }), allowedRule()).boot).toBe(before.boot);
  });

  matrix("E21-layer-session-allow-narrower", async () => {
    const before = expectAllowed(await call({ url: allowedUrl() }), allowedRule());
    broker.setSessionPolicy("default", { allow: [`http://other.test:${P2}`] });
    const [a] = mark(api);
    try {
      const c = await call({ url: allowedUrl() });
      expectDenied(c, "session:allow", `the session's allow list does not include ${allowedUrl()}`);
      expect(newHits(api, a!)).toEqual([]);
      // What the session keeps is still allowed, by the approved rule.
      expect(expectAllowed(await call({ url: `http://other.test:${P2}/kept` }), `http://other.test:${P2}`).boot).toBe(
        before.boot,
      );
    } finally {
      broker.setSessionPolicy("default", {});
    }
    expect(expectAllowed(await call({ url: allowedUrl() }), allowedRule()).boot).toBe(before.boot);
  });

  matrix("E22-layer-session-allow-cannot-widen", async () => {
    broker.setSessionPolicy("default", { allow: [`http://evil.test:${P4}`, `http://api.test:${P1}/v1`] });
    const [h] = mark(hostOnly);
    try {
      const c = await call({ url: `http://evil.test:${P4}/` });
      expectDenied(c, "manifest:no-match", `no approved rule of 'fetcher' allows GET http://evil.test:${P4}/`);
      expect(newHits(hostOnly, h!)).toEqual([]);
    } finally {
      broker.setSessionPolicy("default", {});
    }
  });

  matrix("E23-layer-hook-block", async () => {
    const before = expectAllowed(await call({ url: allowedUrl() }), allowedRule());
    hook = async (event) =>
      event.capability === "net.fetch" && event.target.includes("/v1/private")
        ? { block: "private paths need a human", by: "guard" }
        : null;
    const [a] = mark(api);
    hookEvents.length = 0;
    const c = await call({ url: `http://api.test:${P1}/v1/private/x` });
    expectDenied(c, "hook:guard", "Blocked by a hook: private paths need a human");
    expect(c.rows[0]!.target).toBe(`http://api.test:${P1}/v1/private/x`);
    expect(hookEvents).toEqual([
      expect.objectContaining({
        extension: MAIN,
        capability: "net.fetch",
        target: `http://api.test:${P1}/v1/private/x`,
        within: "tool:fetch",
      }),
    ]);
    expect(newHits(api, a!)).toEqual([]);
    hook = async () => null;
    const after = expectAllowed(await call({ url: `http://api.test:${P1}/v1/private/x` }), allowedRule());
    expect([c.reply!.boot, after.boot]).toEqual([before.boot, before.boot]);
  });
});

// ---------------------------------------------------------------------------
// URL bypass classes: userinfo, schemes, ports, IDN, trailing dots
// ---------------------------------------------------------------------------

describe("URL tricks", () => {
  matrix("E24-userinfo-host-at", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}@evil.test:${P1}/v1/echo` });
    expectDenied(c, "url", "credentials in the URL (userinfo) are not allowed");
    const c2 = await call({ url: `http://api.test@evil.test:${P1}/v1/echo` });
    expectDenied(c2, "url", "credentials in the URL (userinfo) are not allowed", `evil.test:${P1}`);
    expect(newHits(api, a!)).toEqual([]);
    expect(lookups.get("evil.test") ?? 0).toBe(0);
  });

  matrix("E25-userinfo-user-pass", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://user:pass@api.test:${P1}/v1/echo` });
    expectDenied(c, "url", "credentials in the URL (userinfo) are not allowed");
    expect(newHits(api, a!)).toEqual([]);
  });

  matrix("E26-backslash-authority", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://evil.test\\@api.test:${P1}/v1/echo` });
    expectDenied(c, "manifest:no-match", "allows GET http://evil.test/");
    expect(newHits(api, a!)).toEqual([]);
  });

  matrix("E27-scheme-file", async () => {
    expectDenied(await call({ url: "file:///etc/passwd" }), "url", "scheme 'file' is not allowed");
  });

  matrix("E28-scheme-ftp", async () => {
    expectDenied(await call({ url: `ftp://api.test:${P1}/v1/echo` }), "url", "scheme 'ftp' is not allowed");
  });

  matrix("E29-scheme-data", async () => {
    expectDenied(await call({ url: "data:text/plain,hello" }), "url", "scheme 'data' is not allowed");
  });

  matrix("E30-scheme-https-vs-http", async () => {
    const [a] = mark(api);
    const c = await call({ url: `https://api.test:${P1}/v1/echo` });
    expectDenied(c, "manifest:no-match", `allows GET https://api.test:${P1}/v1/echo`);
    expect(newHits(api, a!)).toEqual([]);
  });

  /** Port 80 is allowed by the rule either way; it is reached when this test could listen on it. */
  async function viaPort80(url: string, rule: string, expectedPath: string): Promise<void> {
    const [p] = mark(port80);
    const c = await call({ url });
    expect(c.rows.map((r) => [r.decision, r.rule])).toEqual([["allowed", rule]]);
    if (port80 !== null) {
      expect(c.reply).toMatchObject({ ok: true, status: 200 });
      expect(newHits(port80, p!).map((h) => h.path)).toEqual([expectedPath]);
      expect(echoed(c.reply!).headers.host).toBe(url.includes("port80b") ? "port80b.test" : "port80.test");
    } else {
      // Allowed by policy, nothing listens: `unreachable`, audited as allowed.
      expect(c.reply).toMatchObject({ ok: false, code: "unreachable" });
    }
  }

  matrix("E31-default-port-explicit-in-url", async () => {
    await viaPort80("http://port80.test:80/p/x", "http://port80.test/p", "/p/x");
  });

  matrix("E32-default-port-explicit-in-rule", async () => {
    await viaPort80("http://port80b.test/q/x", "http://port80b.test:80/q", "/q/x");
  });

  matrix("E33-other-port", async () => {
    const [s] = mark(stray);
    const c = await call({ url: `http://api.test:${P5}/v1/echo` });
    expectDenied(c, "manifest:no-match", `allows GET http://api.test:${P5}/v1/echo`);
    expect(newHits(stray, s!)).toEqual([]);
  });

  matrix("E34-idn-alabel-rule-ulabel-url", async () => {
    const c = await call({ url: `http://bücher.test:${P1}/idn/x` });
    const reply = expectAllowed(c, `http://xn--bcher-kva.test:${P1}/idn`, `http://xn--bcher-kva.test:${P1}/idn/x`);
    expect(echoed(reply).headers.host).toBe(`xn--bcher-kva.test:${P1}`);
  });

  matrix("E35-idn-ulabel-rule-alabel-url", async () => {
    const c = await call({ url: `http://xn--mnchen-3ya.test:${P1}/idn/x` });
    expectAllowed(c, `http://münchen.test:${P1}/idn`);
    // The U-label URL is the same name.
    expectAllowed(await call({ url: `http://MÜNCHEN.test:${P1}/idn/y` }), `http://münchen.test:${P1}/idn`);
  });

  matrix("E36-trailing-dot", async () => {
    const before = lookups.get("api.test") ?? 0;
    const c = await call({ url: `http://api.test.:${P1}/v1/echo` });
    expectAllowed(c, `http://api.test:${P1}/v1`);
    expect(lookups.get("api.test")).toBe(before + 1);
    expect(lookups.has("api.test.")).toBe(false);
  });

  matrix("E37-double-trailing-dot", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test..:${P1}/v1/echo` });
    expectDenied(c, "url", "bad host", "empty label");
    expect(newHits(api, a!)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// IP literal spellings of 127.0.0.1 with no rule naming any address
// ---------------------------------------------------------------------------

describe("IP literal encodings (fetcher-names: no address rule)", () => {
  const literal = (id: string, host: string, canonical: string) =>
    matrix(id, async () => {
      const [a, v] = mark(api, ipv6);
      const c = await call({ url: `http://${host}:${P1}/v1/echo` }, { ext: NAMES });
      expectDenied(
        c,
        "manifest:no-match",
        `no approved rule of 'fetcher-names' allows GET http://${canonical}:${P1}/v1/echo`,
      );
      expect(newHits(api, a!)).toEqual([]);
      expect(newHits(ipv6, v!)).toEqual([]);
    });
  literal("E38-ip-decimal", "2130706433", "127.0.0.1");
  literal("E39-ip-hex", "0x7f000001", "127.0.0.1");
  literal("E40-ip-octal", "0177.0.0.1", "127.0.0.1");
  literal("E41-ip-short", "127.1", "127.0.0.1");
  literal("E42-ip-unspecified", "0.0.0.0", "0.0.0.0");
  literal("E43-ipv6-loopback-literal", "[::1]", "[::1]");
  literal("E44-ipv4-mapped-dotted", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]");
  literal("E45-ipv4-mapped-hex", "[::ffff:7f00:1]", "[::ffff:7f00:1]");
  literal("E46-nat64-literal", "[64:ff9b::7f00:1]", "[64:ff9b::7f00:1]");
});

// ---------------------------------------------------------------------------
// DNS answers
// ---------------------------------------------------------------------------

describe("DNS answers are judged, every one, once", () => {
  const answer = (id: string, name: string, cls: string, words: string) =>
    matrix(id, async () => {
      const [a] = mark(api);
      const before = lookups.get(name) ?? 0;
      const c = await call({ url: `http://${name}:${P1}/x` }, { ext: NAMES });
      expectDenied(
        c,
        `address:${cls}`,
        `${name} resolves to`,
        `a ${words} address; only a rule naming that IP or CIDR may reach it`,
      );
      expect(lookups.get(name)).toBe(before + 1);
      expect(newHits(api, a!)).toEqual([]);
    });
  answer("E47-dns-loopback", "lo.dns.test", "loopback", "loopback");
  answer("E48-dns-loopback-v6", "lo6.dns.test", "loopback", "loopback");
  answer("E49-dns-private", "priv.dns.test", "private", "private");
  answer("E50-dns-unique-local-v6", "ula.dns.test", "private", "private");
  answer("E51-dns-link-local", "ll.dns.test", "link_local", "link-local");
  answer("E52-dns-cgnat", "cgnat.dns.test", "cgnat", "cgnat");
  answer("E53-dns-metadata", "meta.dns.test", "metadata", "metadata");
  answer("E54-dns-unspecified", "zero.dns.test", "unspecified", "unspecified");
  answer("E55-dns-mapped-loopback", "mapped.dns.test", "loopback", "loopback");

  matrix("E56-dns-mixed-public-private", async () => {
    const c = await call({ url: `http://mixed.dns.test:${P1}/x` }, { ext: NAMES });
    expectDenied(c, "address:private", "mixed.dns.test resolves to 10.0.0.1, a private address");
  });

  matrix("E57-dns-rebind-judged-address-connected", async () => {
    // The first lookup answers the address a rule names (127.0.0.1, standing in
    // for "public"); any later lookup answers 127.0.0.2, where another server
    // listens on the same port. A second lookup at connect time would reach it.
    const [a, r] = mark(api, rebindTarget);
    const c = await call({ url: `http://rebind.test:${P1}/r/x` });
    expect(echoed(expectAllowed(c, `http://rebind.test:${P1}/r`)).server).toBe("api");
    expect(lookups.get("rebind.test")).toBe(1);
    expect(newHits(api, a!)).toHaveLength(1);
    expect(newHits(rebindTarget, r!)).toEqual([]);
  });

  matrix("E58-dns-rebind-next-lookup-refused", async () => {
    const [a, r] = mark(api, rebindTarget);
    const c = await call({ url: `http://rebind.test:${P1}/r/x` });
    expectDenied(c, "address:loopback", "rebind.test resolves to 127.0.0.2, a loopback address");
    expect(lookups.get("rebind.test")).toBe(2);
    expect(newHits(api, a!)).toEqual([]);
    expect(newHits(rebindTarget, r!)).toEqual([]);
  });

  matrix("E59-dns-no-answer", async () => {
    expectDenied(
      await call({ url: `http://empty.dns.test:${P1}/x` }, { ext: NAMES }),
      "dns",
      "empty.dns.test has no addresses",
    );
    expectDenied(
      await call({ url: `http://nx.dns.test:${P1}/x` }, { ext: NAMES }),
      "dns",
      "cannot resolve nx.dns.test",
      "ENOTFOUND",
    );
  });
});

// ---------------------------------------------------------------------------
// Redirects
// ---------------------------------------------------------------------------

describe("redirects: every hop judged", () => {
  const redirect = (to: string, status = 302) =>
    `http://api.test:${P1}/v1/redirect?status=${status}&to=${encodeURIComponent(to)}`;

  matrix("E60-redirect-allowed-followed", async () => {
    const [a, o] = mark(api, other);
    const c = await call({ url: redirect(`http://other.test:${P2}/landing`) });
    const reply = expectAllowed(c, `http://other.test:${P2}`, `http://other.test:${P2}/landing`, { chain: true });
    expect(reply.url).toBe(`http://other.test:${P2}/landing`);
    expect(echoed(reply).server).toBe("other");
    expect(newHits(api, a!)).toHaveLength(1);
    expect(newHits(other, o!)).toHaveLength(1);
  });

  matrix("E61-redirect-disallowed-host", async () => {
    const [a, s] = mark(api, stray);
    const c = await call({ url: redirect(`http://api.test:${P5}/collect`) });
    expectDeniedHop(c, "manifest:no-match", `allows GET http://api.test:${P5}/collect`);
    expect(c.rows.at(-1)!.target).toBe(`http://api.test:${P5}/collect`);
    expect(newHits(api, a!)).toHaveLength(1);
    expect(newHits(stray, s!)).toEqual([]);
  });

  matrix("E62-redirect-metadata", async () => {
    const c = await call({ url: redirect("http://169.254.169.254/latest/meta-data/iam/") });
    expectDeniedHop(c, "manifest:no-match", "allows GET http://169.254.169.254/latest/meta-data/iam/");
  });

  matrix("E63-redirect-file", async () => {
    const c = await call({ url: redirect("file:///etc/passwd") });
    expectDeniedHop(c, "url", "scheme 'file' is not allowed");
    expect(c.rows.at(-1)!.target).toBe("file:///etc/passwd");
  });

  matrix("E64-redirect-loop-bounded", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/v1/loop` });
    expectDeniedHop(c, "limit:redirects", "more than 3 redirects");
    expect(newHits(api, a!)).toHaveLength(4); // the first request and max_redirects = 3 hops
  });

  const credentials = { authorization: "Bearer t0ken", cookie: "sid=abc", "x-keep": "kept" };

  matrix("E65-redirect-credentials-cross-origin-stripped", async () => {
    const c = await call({ url: redirect(`http://other.test:${P2}/landing`), headers: credentials });
    const seen = echoed(expectAllowed(c, `http://other.test:${P2}`, undefined, { chain: true }));
    expect(seen.server).toBe("other");
    expect(seen.headers["x-keep"]).toBe("kept");
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers.cookie).toBeUndefined();
    // The first hop, same origin as the caller asked, did get them.
    expect(api.hits.at(-1)!.headers).toMatchObject({ authorization: "Bearer t0ken", cookie: "sid=abc" });
  });

  matrix("E66-redirect-credentials-same-origin-kept", async () => {
    const c = await call({ url: redirect("/v1/echo"), headers: credentials });
    const seen = echoed(expectAllowed(c, `http://api.test:${P1}/v1`, undefined, { chain: true }));
    expect(seen).toMatchObject({ server: "api", path: "/v1/echo" });
    expect(seen.headers).toMatchObject({ authorization: "Bearer t0ken", cookie: "sid=abc", "x-keep": "kept" });
  });

  matrix("E67-redirect-303-post-becomes-get", async () => {
    const c = await call({
      url: redirect("/v1/echo", 303),
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "secret",
    });
    const seen = echoed(expectAllowed(c, `http://api.test:${P1}/v1`, undefined, { chain: true }));
    expect(seen).toMatchObject({ method: "GET", body: "" });
    expect(seen.headers["content-type"]).toBeUndefined();
  });

  matrix("E68-redirect-userinfo", async () => {
    const [o] = mark(other);
    const c = await call({ url: redirect(`http://user:pass@other.test:${P2}/landing`) });
    expectDeniedHop(c, "url", "credentials in the URL (userinfo) are not allowed");
    expect(newHits(other, o!)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// Limits, headers, environment, cookies, paths
// ---------------------------------------------------------------------------

describe("limits and what is never forwarded", () => {
  matrix("E69-body-cap", async () => {
    writePolicy(BASE_POLICY.replace("max_body_bytes = 65536", "max_body_bytes = 1000"));
    try {
      const c = await call({ url: `http://api.test:${P1}/v1/big?size=5000` });
      expectDenied(c, "limit:body", "the response body exceeds 1000 bytes");
      expect(c.rows[0]!.target).toBe(`http://api.test:${P1}/v1/big?size=…`);
      const small = await call({ url: `http://api.test:${P1}/v1/big?size=1000` });
      expect(expectAllowed(small, `http://api.test:${P1}/v1`).body).toHaveLength(1000);
    } finally {
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E70-slow-server-deadline", async () => {
    // A session of its own: a timeout may replace its satellite. Warm it first,
    // so that the boot does not count against the one-second deadline.
    expectAllowed(
      await call({ url: `http://api.test:${P1}/v1/echo` }, { session: "slow", tool: "fetch_short" }),
      `http://api.test:${P1}/v1`,
    );
    const [a] = mark(api);
    // The server holds the request and never answers: only the deadline can end the call.
    const { done, res } = await heldCall(
      { url: `http://api.test:${P1}/v1/slow` },
      { session: "slow", tool: "fetch_short" },
    );
    const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
    const c = await done;
    // Bounded: the deadline cut the request off, and the server saw its connection close.
    await closed;
    expect(newHits(api, a!).map((h) => h.path)).toEqual(["/v1/slow"]);
    if (c.reply !== null) {
      // The broker's own deadline fired first: allowed by policy, not reached in time.
      expect(c.reply).toMatchObject({ ok: false, code: "unreachable" });
      expect(c.reply.message).toContain("net.fetch failed");
      expect(c.rows.map((r) => [r.decision, r.rule])).toEqual([["allowed", `http://api.test:${P1}/v1`]]);
    } else {
      expect(c.outcome).toMatchObject({ ok: false, error: { code: "timeout" } });
    }
    for (const res of api.held.splice(0)) res.destroy();
  });

  matrix("E71-hop-by-hop-headers-stripped", async () => {
    const headers: Array<[string, string]> = [
      ["proxy-authorization", "Basic cHJveHk6c2VjcmV0"],
      ["proxy-connection", "keep-alive"],
      ["connection", "x-hop"],
      ["keep-alive", "timeout=600"],
      ["host", "evil.test"],
      ["transfer-encoding", "chunked"],
      ["te", "trailers"],
      ["upgrade", "websocket"],
      ["x-forwarded-for", "10.0.0.1"],
      ["forwarded", "for=10.0.0.1"],
      ["via", "1.1 evil"],
      ["x-ok", "yes"],
    ];
    const c = await call({ url: `http://api.test:${P1}/v1/echo`, headers });
    const seen = echoed(expectAllowed(c, `http://api.test:${P1}/v1`)).headers;
    expect(seen["x-ok"]).toBe("yes");
    expect(seen.host).toBe(`api.test:${P1}`);
    for (const name of [
      "proxy-authorization",
      "proxy-connection",
      "keep-alive",
      "transfer-encoding",
      "te",
      "upgrade",
      "x-forwarded-for",
      "forwarded",
      "via",
    ]) {
      expect([name, seen[name]]).toEqual([name, undefined]);
    }
    expect(seen.connection ?? "").not.toContain("x-hop");
  });

  matrix("E72-proxy-env-ignored", async () => {
    const names = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"];
    const saved = names.map((n) => process.env[n]);
    const [a, p] = mark(api, proxy);
    try {
      for (const n of names) process.env[n] = `http://127.0.0.1:${proxy.port}`;
      const c = await call({ url: `http://api.test:${P1}/v1/echo` });
      expect(echoed(expectAllowed(c, `http://api.test:${P1}/v1`)).server).toBe("api");
    } finally {
      names.forEach((n, i) => (saved[i] === undefined ? delete process.env[n] : (process.env[n] = saved[i])));
    }
    expect(newHits(api, a!)).toHaveLength(1);
    expect(newHits(proxy, p!)).toEqual([]);
  });

  matrix("E73-no-cookie-jar", async () => {
    const set = await call({ url: `http://api.test:${P1}/v1/setcookie` });
    const reply = expectAllowed(set, `http://api.test:${P1}/v1`);
    expect(reply.headers).toContainEqual(["set-cookie", "sid=s3cret; Path=/"]);
    const next = await call({ url: `http://api.test:${P1}/v1/echo` });
    expect(echoed(expectAllowed(next, `http://api.test:${P1}/v1`)).headers.cookie).toBeUndefined();
  });

  matrix("E74-crlf-header-dropped", async () => {
    const c = await call({
      url: `http://api.test:${P1}/v1/echo`,
      headers: [
        ["x-inject", "a\r\nx-evil: 1"],
        ["x-ok", "yes"],
      ],
    });
    const seen = echoed(expectAllowed(c, `http://api.test:${P1}/v1`)).headers;
    expect(seen["x-ok"]).toBe("yes");
    expect(seen["x-inject"]).toBeUndefined();
    expect(seen["x-evil"]).toBeUndefined();
  });
});

describe("paths against a path-prefix rule", () => {
  const refusedPath = (id: string, raw: string, shown: string) =>
    matrix(id, async () => {
      const [a] = mark(api);
      const c = await call({ url: `http://api.test:${P1}${raw}` });
      expectDenied(c, "manifest:no-match", `allows GET http://api.test:${P1}${shown}`);
      expect(newHits(api, a!)).toEqual([]);
    });
  refusedPath("E75-encoded-slash", "/v1%2F..%2Fadmin", "/v1%2F..%2Fadmin");
  refusedPath("E76-dot-segments", "/v1/../admin", "/admin");
  refusedPath("E77-encoded-dot-segments", "/v1/%2e%2e/admin", "/admin");
  refusedPath("E78-backslash-dot-segments", "/v1\\..\\admin", "/admin");
});

// Finding: a prefix rule trusted the server to decode the path as the judge does.
describe("paths a prefix rule cannot vouch for (path-guard.ts)", () => {
  const unsafe = (id: string, raw: string, problem: string, why: string) =>
    matrix(id, async () => {
      const [a] = mark(api);
      const c = await call({ url: `http://api.test:${P1}${raw}` });
      expectDenied(
        c,
        `path:${problem} http://api.test:${P1}/v1`,
        `the path ${raw} ${why}`,
        `the rule 'http://api.test:${P1}/v1'`,
      );
      expect(c.rows[0]!.target).toBe(`http://api.test:${P1}${raw}`);
      expect(newHits(api, a!)).toEqual([]);
    });
  unsafe("E130-path-params", "/v1/..;/admin", "params", "holds a path parameter (';')");
  unsafe(
    "E131-path-double-encoded-dots",
    "/v1/%252e%252e/admin",
    "encoded-dot",
    "holds an encoded '.' (after decoding 1 time)",
  );
  unsafe(
    "E132-path-triple-encoded-dots",
    "/v1/%25252e%25252e/admin",
    "encoded-dot",
    "holds an encoded '.' (after decoding 2 times)",
  );
  unsafe(
    "E133-path-overlong-utf8",
    "/v1/%c0%ae%c0%ae/admin",
    "bad-utf8",
    "holds percent-encoded bytes that are not valid UTF-8; a lenient decoder reads overlong forms such as %c0%ae as '.'",
  );
  unsafe("E134-path-double-encoded-backslash", "/v1/..%255c..%255cadmin", "encoded-backslash", "holds an encoded '\\'");

  matrix("E143-operator-deny-prefix-unsafe-path", async () => {
    // other.test:P2 is approved for every path; the deny takes /admin away, however it is spelled.
    writePolicy(`${BASE_POLICY}deny = ["http://other.test:${P2}/admin"]\n`);
    try {
      for (const path of ["/x/..;/admin", "/x/%252e%252e/admin", "/admin;x"]) {
        const [o] = mark(other);
        const c = await call({ url: `http://other.test:${P2}${path}` });
        expectDenied(c, `operator:deny http://other.test:${P2}/admin`);
        expect(newHits(other, o!)).toEqual([]);
      }
      expectAllowed(await call({ url: `http://other.test:${P2}/x/y` }), `http://other.test:${P2}`);
    } finally {
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E135-path-plain-still-allowed", async () => {
    for (const path of ["/v1/a-b_c~d", "/v1/%41", "/v1/caf%C3%A9"]) {
      const [a] = mark(api);
      const c = await call({ url: `http://api.test:${P1}${path}` });
      expect(echoed(expectAllowed(c, `http://api.test:${P1}/v1`)).path).toBe(path);
      expect(newHits(api, a!).map((h) => h.path)).toEqual([path]);
    }
  });
});

// Finding: GET/HEAD carried bodies, and method-override headers passed a GET rule (method-guard.ts).
describe("what a request says besides its request line (method-guard.ts)", () => {
  const bodyRefused = (id: string, method: string, path: string) =>
    matrix(id, async () => {
      const [a] = mark(api);
      const c = await call({ url: `http://api.test:${P1}${path}`, method, body: "smuggled" });
      expectDenied(c, "request:body", `a ${method} request carries no body (this one has 8 bytes)`);
      expect(newHits(api, a!)).toEqual([]);
    });
  bodyRefused("E136-get-body-refused", "GET", "/ro/item");
  bodyRefused("E137-head-body-refused", "HEAD", "/ro/item");
  bodyRefused("E138-options-body-refused", "OPTIONS", "/v1/echo");

  matrix("E139-method-override-header-refused", async () => {
    for (const header of ["X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"]) {
      const [a] = mark(api);
      const c = await call({ url: `http://api.test:${P1}/ro/item`, headers: [[header, "DELETE"]] });
      expectDenied(
        c,
        `request:override ${header.toLowerCase()}`,
        `the header '${header.toLowerCase()}' asks the server to change the method`,
      );
      expect(newHits(api, a!)).toEqual([]);
    }
  });

  matrix("E140-method-override-allowed-method-refused", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/ro/item`, headers: { "x-http-method-override": "GET" } });
    expectDenied(c, "request:override x-http-method-override");
    expect(newHits(api, a!)).toEqual([]);
  });

  matrix("E141-url-override-header-refused", async () => {
    for (const header of ["x-original-url", "x-rewrite-url"]) {
      const [a] = mark(api);
      const c = await call({ url: `http://api.test:${P1}/v1/echo`, headers: { [header]: "/admin" } });
      expectDenied(c, `request:override ${header}`, "change the path");
      expect(newHits(api, a!)).toEqual([]);
    }
  });

  matrix("E142-method-override-query-refused", async () => {
    const [a] = mark(api);
    const c = await call({ url: `http://api.test:${P1}/v1/echo?_method=DELETE`, method: "POST", body: "x" });
    expectDenied(c, "request:override _method", "the query parameter '_method'");
    expect(newHits(api, a!)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// Known gaps (real bugs; each test states the correct behaviour)
// ---------------------------------------------------------------------------

describe("known gaps", () => {
  // broker/egress/judge.ts picks the allowing rule with `matchesUrl`, which
  // for an IP/CIDR rule ignores the host: an address rule then allows ANY
  // name that resolves to its address (rules.ts `allowsAddress` says an
  // address rule needs the URL's host to be that address).
  matrix(
    "E79-address-rule-is-not-a-name-rule",
    async () => {
      const [a] = mark(api);
      const c = await call({ url: `http://evil.test:${P1}/v1/echo` });
      expectDenied(c, "manifest:no-match", `no approved rule of 'fetcher' allows GET http://evil.test:${P1}/v1/echo`);
      expect(newHits(api, a!)).toEqual([]);
    },
    {},
  );

  matrix(
    "E80-address-rule-does-not-cover-apex",
    async () => {
      const [a] = mark(api);
      const c = await call({ url: `http://wild.test:${P1}/w/x` });
      expectDenied(c, "manifest:no-match", `allows GET http://wild.test:${P1}/w/x`);
      expect(newHits(api, a!)).toEqual([]);
    },
    {},
  );

  // broker/caps/dispatcher.ts asks the hook stage once, with the first URL;
  // redirect hops are judged by the rules but never shown to the hooks.
  matrix(
    "E81-hook-judges-redirect-hops",
    async () => {
      hook = async (event) =>
        new URL(event.target).hostname === "other.test" ? { block: "other.test is off limits", by: "guard" } : null;
      const [o] = mark(other);
      const c = await call({
        url: `http://api.test:${P1}/v1/redirect?to=${encodeURIComponent(`http://other.test:${P2}/landing`)}`,
      });
      expect(newHits(other, o!)).toEqual([]);
      expectDeniedHop(c, "hook:guard", "Blocked by a hook: other.test is off limits");
      expect(c.rows.at(-1)!.target).toBe(`http://other.test:${P2}/landing`);
    },
    {},
  );

  // broker/caps/dispatcher.ts audits refused hops and the final allowed one:
  // an allowed intermediate hop (which received the request, body included)
  // leaves no row.
  matrix(
    "E82-every-hop-audited",
    async () => {
      const first = `http://api.test:${P1}/v1/redirect?status=307&to=${encodeURIComponent(`http://other.test:${P2}/landing`)}`;
      const c = await call({ url: first, method: "POST", body: "data for the first hop" });
      expect(api.hits.at(-1)!.body).toBe("data for the first hop");
      expect(c.rows.map((r) => [r.decision, r.rule, r.target])).toEqual([
        ["allowed", `http://api.test:${P1}/v1`, urlWithoutValues(first)],
        ["allowed", `http://other.test:${P2}`, `http://other.test:${P2}/landing`],
      ]);
    },
    {},
  );

  matrix("E83-revoked-approval-cuts-egress", async () => {
    // Every layer case above ran on one satellite that was never restarted.
    const main = await call({ url: `http://api.test:${P1}/v1/echo` });
    expect(main.reply!.boot).toBe(mainBoot);
    expectAllowed(
      await call({ url: `http://api.test:${P1}/v1/echo` }, { session: "revoke" }),
      `http://api.test:${P1}/v1`,
    );
    broker.registry.revoke(MAIN);
    const [a] = mark(api);
    try {
      // The revocation stops the extension's satellites; the next call is refused before any fetch.
      await expect(call({ url: `http://api.test:${P1}/v1/echo` }, { session: "revoke" })).rejects.toThrow(
        "was revoked",
      );
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      broker.registry.approve(MAIN);
    }
  });
});

// ---------------------------------------------------------------------------
// Judged per act: a policy change during an exchange
// ---------------------------------------------------------------------------

/** Waits for a condition the servers or the broker make true (an event, polled). */
async function until(what: string, test: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !test(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Starts a call whose first request the api server holds; resolves once it is held. */
async function heldCall(
  args: FetchArgs,
  options: { ext?: string; session?: string; tool?: string } = {},
): Promise<{ done: Promise<Called>; res: ServerResponse }> {
  const before = api.held.length;
  const done = call(args, options);
  await until("the api server to hold the request", () => api.held.length > before);
  return { done, res: api.held.at(-1)! };
}

describe("judged per act: a policy change during an exchange", () => {
  const slow = () => `http://api.test:${P1}/v1/slow`;

  matrix("E84-revoked-mid-chain", async () => {
    expectAllowed(
      await call({ url: `http://api.test:${P1}/v1/echo` }, { ext: LIVE, session: "live" }),
      `http://api.test:${P1}/v1`,
    );
    const [o] = mark(other);
    const { done, res } = await heldCall({ url: slow() }, { ext: LIVE, session: "live" });
    broker.registry.revoke(LIVE);
    try {
      const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
      await closed; // the broker cut the held hop off: the connection closed without an answer
      const c = await done;
      // The revocation stopped the satellite too, so the call may end before the fetch's row is written.
      expect(c.reply?.ok ?? false).toBe(false);
      const rows = () => {
        broker.ledger.flush();
        return broker.store.sqlite
          .prepare("select decision, rule from cap_audit where session_id = 'live' and target = ? order by id")
          .all(slow()) as AuditRow[];
      };
      await until("the withdrawn fetch's audit row", () => rows().some((r) => r.rule.startsWith("withdrawn:")));
      expect(
        rows()
          .filter((r) => r.decision === "denied")
          .map((r) => r.rule),
      ).toEqual(["withdrawn:manifest:no-match"]);
      expect(newHits(other, o!)).toEqual([]);
    } finally {
      broker.registry.approve(LIVE);
    }
  });

  matrix("E85-narrowed-mid-chain", async () => {
    const [o] = mark(other);
    const { done, res } = await heldCall({ url: slow() }, { ext: LIVE, session: "narrow" });
    // Narrowed to the api rules only: the held hop still passes, other.test no longer does.
    broker.registry.approve(LIVE, { onlyNet: mainRules.filter((r) => r.includes(`:${P1}/v1`)) });
    await broker.recheckEgress();
    try {
      res.writeHead(302, { location: `http://other.test:${P2}/landing` }).end();
      const c = await done;
      expectDeniedHop(c, "manifest:no-match", `other.test:${P2}/landing`);
      expect(c.rows.map((r) => r.decision)).toEqual(["allowed", "denied"]);
      expect(newHits(other, o!)).toEqual([]);
    } finally {
      broker.registry.approve(LIVE, { all: true });
    }
  });

  matrix("E86-offline-mid-chain", async () => {
    const [o] = mark(other);
    const { done, res } = await heldCall({ url: slow() }, { session: "offline-mid" });
    const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
    broker.setSessionPolicy("offline-mid", { offline: true });
    try {
      await closed;
      const c = await done;
      expectDenied(
        c,
        "withdrawn:session:offline",
        "net.fetch stopped mid-request: the policy changed (this session is offline: no egress)",
      );
      expect(newHits(other, o!)).toEqual([]);
    } finally {
      broker.setSessionPolicy("offline-mid", {});
    }
  });

  matrix("E87-operator-deny-mid-chain", async () => {
    const [o] = mark(other);
    const { done, res } = await heldCall({ url: slow() }, { session: "deny-mid" });
    writePolicy(`${BASE_POLICY}deny = ["http://other.test:${P2}"]\n`);
    try {
      res.writeHead(302, { location: `http://other.test:${P2}/landing` }).end();
      const c = await done;
      expectDeniedHop(c, `operator:deny http://other.test:${P2}`, "the operator's policy denies");
      expect(newHits(other, o!)).toEqual([]);
    } finally {
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E88-body-cut-mid-stream", async () => {
    const { done, res } = await heldCall({ url: slow() }, { session: "stream" });
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("first part of a body that never ends\n");
    const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
    broker.setSessionPolicy("stream", { offline: true });
    try {
      await closed;
      const c = await done;
      const reply = expectDenied(c, "withdrawn:session:offline");
      expect(reply.body).toBeUndefined();
    } finally {
      broker.setSessionPolicy("stream", {});
    }
  });
});

describe("hooks see the judged request", () => {
  matrix("E89-hook-sees-judged-request", async () => {
    hookEvents.length = 0;
    const c = await call({ url: `http://API.test.:${P1}/v1/echo?token=s3cret` });
    expectAllowed(c, `http://api.test:${P1}/v1`);
    const event = hookEvents.find((e) => e.capability === "net.fetch")!;
    expect(event.request).toEqual({
      method: "GET",
      scheme: "http",
      host: "api.test",
      port: P1,
      path: "/v1/echo",
      rule: `http://api.test:${P1}/v1`,
      addresses: [{ address: "127.0.0.1", class: "loopback" }],
    });
    expect(JSON.stringify(event.request)).not.toContain("s3cret");
    // An IPv6 spelling of an IPv4 address is shown with the IPv4 it carries.
    hookEvents.length = 0;
    await call({ url: `http://[::ffff:127.0.0.1]:${P1}/v1/echo` });
    const mapped = hookEvents.find((e) => e.capability === "net.fetch");
    if (mapped !== undefined)
      expect(mapped.request?.addresses).toEqual([{ address: "::ffff:7f00:1", class: "loopback", ipv4: "127.0.0.1" }]);
  });

  matrix("E90-hook-not-asked-when-refused", async () => {
    hookEvents.length = 0;
    const c = await call({ url: `http://evil.test:${P1}/v1/echo` });
    expectDenied(c, "manifest:no-match");
    expect(hookEvents.filter((e) => e.capability === "net.fetch")).toEqual([]);
  });
});

describe("bounds on what an extension can make the broker spend", () => {
  matrix("E91-redirect-body-closed", async () => {
    const { done, res } = await heldCall({ url: `http://api.test:${P1}/v1/slow` }, { session: "redirect-body" });
    const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
    res.writeHead(302, { location: `http://api.test:${P1}/v1/echo`, "content-type": "text/plain" });
    // A body that never ends: drained, it would stream until the deadline.
    res.write("x".repeat(64 * 1024));
    await closed;
    const c = await done;
    expect(c.reply).toMatchObject({ ok: true, status: 200 });
    expect(c.rows.map((r) => r.decision)).toEqual(["allowed", "allowed"]);
  });

  /** Runs `count` fetches of a held URL in one invocation, answering each wave once `bound` are on the wire; the most seen at once. */
  async function peakOfBurst(count: number, bound: number, session: string): Promise<number> {
    let inFlight = 0;
    let most = 0;
    const started = api.held.length;
    const onRequest = (req: { url?: string }) => {
      if (req.url?.endsWith("/slow") !== true) return;
      inFlight++;
      most = Math.max(most, inFlight);
    };
    api.server.on("request", onRequest);
    try {
      const done = broker.callTool(
        MAIN,
        "fetch_many",
        JSON.stringify({ url: `http://api.test:${P1}/v1/slow`, count }),
        { session },
      );
      let answered = 0;
      while (answered < count) {
        // Wait until the bound is full (or the last few are on the wire), then let them all answer.
        await until(
          "the fetches in flight",
          () => api.held.length - started - answered >= Math.min(bound, count - answered),
        );
        for (const res of api.held.slice(started + answered)) {
          res.writeHead(200).end("ok");
          inFlight--;
          answered++;
        }
      }
      const outcome = await done;
      expect(outcome.ok).toBe(true);
      const results = (outcome as { value: { content: ReadonlyArray<{ json?: { results: unknown[] } }> } }).value
        .content[0]!.json!.results;
      expect(results).toEqual(Array.from({ length: count }, () => ({ ok: true, status: 200 })));
      verdicts.set(currentCase, `allowed ${results.length}, at most ${most} at once`);
      return most;
    } finally {
      api.server.off("request", onRequest);
    }
  }

  matrix("E92-concurrent-fetches-bounded", async () => {
    expect(await peakOfBurst(10, 4, "many")).toBe(4);
  });

  matrix("E96-operator-fetch-ceiling", async () => {
    writePolicy(`${BASE_POLICY}max_fetches = 2\n`);
    try {
      expect(await peakOfBurst(6, 2, "ceiling")).toBe(2);
    } finally {
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E95-fetch-burst-bounded", async () => {
    const sessions = ["burst-1", "burst-2", "burst-3", "burst-4", "burst-5", "burst-6"];
    // Warm satellites first: their boots are not what this case measures.
    for (const session of sessions)
      expectAllowed(await call({ url: `http://api.test:${P1}/v1/echo` }, { session }), `http://api.test:${P1}/v1`);
    const fds = () => readdirSync("/proc/self/fd").length;
    const fdsBefore = fds();
    const rssBefore = process.memoryUsage().rss;
    const started = api.held.length;
    const each = 8;
    const bursts = sessions.map((session) =>
      broker.callTool(MAIN, "fetch_many", JSON.stringify({ url: `http://api.test:${P1}/v1/slow`, count: each }), {
        session,
      }),
    );
    // 6 invocations × 4 each would be 24: the extension's bound (16) holds them at 16.
    await until("the extension's bound to fill", () => api.held.length - started >= 16);
    const fdsHeld = fds();
    // Another extension is not starved by this one's burst.
    const bystander = await call({ url: `http://api.test:${P1}/v1/echo` }, { ext: LIVE, session: "bystander" });
    expect(bystander.reply).toMatchObject({ ok: true, status: 200 });
    expect(api.held.length - started).toBe(16);
    let answered = 0;
    while (answered < sessions.length * each) {
      await until("more fetches on the wire", () => api.held.length - started > answered);
      for (const res of api.held.slice(started + answered)) {
        res.writeHead(200).end("ok");
        answered++;
      }
    }
    const outcomes = await Promise.all(bursts);
    for (const outcome of outcomes) expect(outcome.ok).toBe(true);
    // 16 sockets to the server and 16 accepted by it, with a little slack for the bystander's.
    expect(fdsHeld - fdsBefore).toBeLessThanOrEqual(2 * 16 + 8);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 * 1024);
    verdicts.set(
      currentCase,
      `allowed ${answered} in turn, 16 at most on the wire, +${fdsHeld - fdsBefore} descriptors`,
    );
  });

  matrix("E93-request-body-bounded", async () => {
    const [a] = mark(api);
    const c = await call({
      url: `http://api.test:${P1}/v1/echo`,
      method: "POST",
      body: "y".repeat(4 * 1024 * 1024 + 1),
    });
    expectDenied(c, "limit:request-body", "the request body is over 4194304 bytes");
    expect(newHits(api, a!)).toEqual([]);
  });

  matrix("E94-large-request-body-delivered", async () => {
    const body = "z".repeat(3.5 * 1024 * 1024);
    const c = await call({ url: `http://api.test:${P1}/v1/big?size=3`, method: "POST", body });
    expect(c.reply).toMatchObject({ ok: true, status: 200 });
    expect(api.hits.at(-1)!.body.length).toBe(body.length);
    expect(c.rows.map((r) => [r.decision, r.rule])).toEqual([["allowed", `http://api.test:${P1}/v1`]]);
  });
});

// ---------------------------------------------------------------------------
// Rules broader than they look (finding 3), deny ranges and embeddings (finding 4)
// ---------------------------------------------------------------------------

/** Installs a variant with `rules` and expects `tether install` to refuse it, naming the rule and why. */
async function expectInstallRefused(variant: string, rule: string, ...why: string[]): Promise<void> {
  let message = "";
  try {
    await broker.registry.install(writeVariant(variant, [rule]));
  } catch (err) {
    message = (err as Error).message;
  }
  expect(message).toContain(`net.allow.0: egress rule '${rule}'`);
  for (const part of why) expect(message).toContain(part);
  expect(broker.registry.get(variant)).toBeNull();
  const earlier = verdicts.get(currentCase);
  verdicts.set(currentCase, `${earlier === undefined ? "" : `${earlier}; `}install refused [${rule}]`);
}

describe("rules broader than they look: refused at install", () => {
  matrix("E100-rule-unspecified-refused", async () => {
    await expectInstallRefused(
      "bad-e100-a",
      `http://0.0.0.0:${P1}`,
      "unspecified address",
      "never a rule",
      "name the service's own address",
    );
    await expectInstallRefused("bad-e100-b", `http://[::]:${P1}`, "unspecified address");
    await expectInstallRefused("bad-e100-c", `http://[0.0.0.0/8]:${P1}`, "unspecified address");
    await expectInstallRefused("bad-e100-d", `http://[::ffff:0.0.0.0]:${P1}`, "unspecified address");
    await expectInstallRefused("bad-e100-e", `http://[64:ff9b::]:${P1}`, "unspecified address");
  });

  matrix("E101-rule-every-ipv4-refused", async () => {
    await expectInstallRefused(
      "bad-e101-a",
      `http://[::ffff:0:0/96]:${P1}`,
      "reaches every IPv4 address",
      "ipv4-mapped",
      "write the IPv4 range you mean",
    );
    await expectInstallRefused("bad-e101-b", `http://[::/1]:${P1}`, "reaches every IPv4 address");
    await expectInstallRefused("bad-e101-c", `http://[64:ff9b::/96]:${P1}`, "reaches every IPv4 address", "nat64");
    await expectInstallRefused("bad-e101-d", `http://[2002::/16]:${P1}`, "reaches every IPv4 address", "6to4");
  });

  matrix("E102-rule-range-size-limited", async () => {
    await expectInstallRefused(
      "bad-e102-a",
      `http://[10.0.0.0/8]:${P1}`,
      "covers 16,777,216 addresses",
      "at most /16 for IPv4",
      "split it",
    );
    await expectInstallRefused(
      "bad-e102-b",
      `http://[64:ff9b::a00:0/104]:${P1}`,
      "10.0.0.0/8 (nat64)",
      "at most /16 for IPv4",
    );
    await expectInstallRefused(
      "bad-e102-c",
      `http://[2002:a00::/24]:${P1}`,
      "10.0.0.0/8 (6to4)",
      "at most /16 for IPv4",
    );
    await expectInstallRefused("bad-e102-d", `http://[::ffff:10.0.0.0/104]:${P1}`, "at most /16 for IPv4");
    await expectInstallRefused("bad-e102-e", `http://[fd00::/32]:${P1}`, "at most /48 for IPv6");
    // At the limit: installs (and is not approved: it reaches nothing here).
    await broker.registry.install(
      writeVariant("ok-e102", [`http://[10.20.0.0/16]:${P1}`, `http://[fd00:1:2::/48]:${P1}`]),
    );
    expect(broker.registry.get("ok-e102")).not.toBeNull();
  });

  matrix("E103-rule-disguised-address-refused", async () => {
    await expectInstallRefused(
      "bad-e103-a",
      `http://2852039166:${P1}`,
      "is the IP address 169.254.169.254 written another way: write it as 169.254.169.254",
    );
    await expectInstallRefused("bad-e103-b", `http://0xa9fea9fe:${P1}`, "write it as 169.254.169.254");
    await expectInstallRefused("bad-e103-c", `http://0251.0376.0251.0376:${P1}`, "write it as 169.254.169.254");
    await expectInstallRefused("bad-e103-d", `http://127.1:${P1}`, "write it as 127.0.0.1");
  });

  matrix("E104-rule-range-over-loopback-link-local-metadata-refused", async () => {
    await expectInstallRefused(
      "bad-e104-a",
      `http://[127.0.0.0/24]:${P1}`,
      "covers loopback addresses",
      "one address at a time",
    );
    await expectInstallRefused("bad-e104-b", `http://[169.254.169.0/24]:${P1}`, "link-local and metadata");
    await expectInstallRefused("bad-e104-c", `http://[100.100.0.0/16]:${P1}`, "metadata");
    await expectInstallRefused("bad-e104-d", `http://[fe80::/64]:${P1}`, "link-local");
    await expectInstallRefused("bad-e104-e", `http://[::ffff:127.0.0.0/120]:${P1}`, "loopback");
  });

  matrix("E105-rule-wildcard-dns-refused", async () => {
    await expectInstallRefused(
      "bad-e105-a",
      `http://*.nip.io:${P1}`,
      "'nip.io', a wildcard-DNS domain",
      "name each host you need",
    );
    await expectInstallRefused("bad-e105-b", `https://*.sslip.io`, "'sslip.io', a wildcard-DNS domain");
    await expectInstallRefused("bad-e105-c", `https://*.a.nip.io`, "'nip.io'");
    await expectInstallRefused("bad-e105-d", `https://*.duckdns.org`, "'duckdns.org', a dynamic-DNS domain");
    await expectInstallRefused("bad-e105-e", `https://*.localtest.me`, "wildcard-DNS");
  });

  matrix("E106-review-decodes-rules", async () => {
    const installed = broker.registry.get(MAIN)!;
    const text = renderReview(
      buildReview(installed, broker.registry.status(installed), broker.registry.latestApproval(MAIN)),
      installed,
    );
    const lines = text.split("\n");
    const after = (rule: string) => lines[lines.indexOf(`  the network: ${rule}`) + 1] ?? "";
    expect(after(`http://127.0.0.1:${P1}/v1`)).toContain(
      `means: http://127.0.0.1:${P1}/v1 — 1 address; classes: loopback`,
    );
    expect(after(`http://127.0.0.1:${P1}/v1`)).toContain(`[net] reach has "loopback"`);
    expect(after(`http://münchen.test:${P1}/idn`)).toContain(
      `means: http://xn--mnchen-3ya.test:${P1}/idn — the host xn--mnchen-3ya.test`,
    );
    expect(after(`http://port80.test/p`)).toContain("means: http://port80.test:80/p");
    expect(after(`http://*.wild.test:${P1}/w`)).toContain("any name under wild.test (not wild.test itself)");
    const range = broker.registry.get("ok-e102")!;
    const decoded = renderReview(buildReview(range, broker.registry.status(range), null), range);
    expect(decoded).toContain(`means: http://[10.20.0.0/16]:${P1} — 65,536 addresses (/16 of IPv4); classes: private`);
    expect(decoded).toContain(`means: http://[fd00:1:2::/48]:${P1} — 2^80 addresses (/48 of IPv6); classes: private`);
    verdicts.set(currentCase, "review decoded");
  });
});

describe("operator reach: one switch per address class, metadata by address", () => {
  matrix("E107-reach-per-class", async () => {
    const allowedUrl = `http://api.test:${P1}/v1/echo`;
    const before = expectAllowed(await call({ url: allowedUrl }), `http://api.test:${P1}/v1`);
    writePolicy(BASE_POLICY.replace("allow_private = true", 'reach = ["private", "cgnat"]'));
    const [a] = mark(api);
    try {
      const c = await call({ url: allowedUrl });
      expectDenied(
        c,
        "operator:no-private",
        "the operator's policy forbids loopback addresses (127.0.0.1)",
        'add "loopback" to [net] reach in policy.toml',
      );
      expect(c.reply!.boot).toBe(before.boot);
      expect(newHits(api, a!)).toEqual([]);
      writePolicy(BASE_POLICY.replace("allow_private = true", 'reach = ["loopback"]'));
      expect(expectAllowed(await call({ url: allowedUrl }), `http://api.test:${P1}/v1`).boot).toBe(before.boot);
    } finally {
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E108-metadata-needs-operator-listing", async () => {
    await broker.registry.install(
      writeVariant("fetcher-meta", [`http://meta.dns.test:${P1}`, `http://169.254.169.254:${P1}`]),
    );
    broker.registry.approve("fetcher-meta");
    const message =
      "169.254.169.254 is a cloud metadata address; it is reachable only when the operator lists it in policy.toml";
    // allow_private = true (BASE_POLICY) does not reach metadata.
    expectDenied(
      await call({ url: `http://meta.dns.test:${P1}/latest` }, { ext: "fetcher-meta" }),
      "operator:no-metadata",
      message,
    );
    expectDenied(
      await call({ url: `http://169.254.169.254:${P1}/latest` }, { ext: "fetcher-meta" }),
      "operator:no-metadata",
      message,
    );
    // Nor does every class switch there is.
    writePolicy(
      `${BASE_POLICY}reach = ["loopback", "private", "link_local", "cgnat", "host_interface", "documentation", "benchmarking", "reserved", "multicast", "broadcast"]\n`,
    );
    try {
      expectDenied(
        await call({ url: `http://meta.dns.test:${P1}/latest` }, { ext: "fetcher-meta" }),
        "operator:no-metadata",
        message,
      );
      // A disguised spelling of the address in the URL is the same address.
      expectDenied(
        await call({ url: `http://2852039166:${P1}/latest` }, { ext: "fetcher-meta" }),
        "operator:no-metadata",
      );
    } finally {
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E109-policy-reach-validated", async () => {
    const url = `http://api.test:${P1}/v1/echo`;
    try {
      writePolicy(`${BASE_POLICY}reach = ["metadata"]\n`);
      expectDenied(
        await call({ url }),
        "operator:policy-invalid",
        "net.reach.0",
        "metadata addresses are listed one by one in [net] metadata",
      );
      writePolicy(`${BASE_POLICY}metadata = ["10.0.0.1"]\n`);
      expectDenied(
        await call({ url }),
        "operator:policy-invalid",
        "net.metadata.0",
        "must be a cloud metadata address",
      );
      writePolicy(`${BASE_POLICY}reach = ["everything"]\n`);
      expectDenied(await call({ url }), "operator:policy-invalid", 'must be one of "loopback"');
    } finally {
      writePolicy(BASE_POLICY);
    }
    expectAllowed(await call({ url }), `http://api.test:${P1}/v1`);
  });
});

describe("deny ranges and address rules match every embedding of an IPv4", () => {
  const deniedEmbedding = (id: string, name: string, answer: string) =>
    matrix(id, async () => {
      writePolicy(`${BASE_POLICY}deny = ["http://[127.0.0.0/8]"]\n`);
      try {
        const c = await call({ url: `http://${name}:${P1}/x` }, { ext: NAMES });
        expectDenied(c, "operator:deny http://[127.0.0.0/8]", `the operator's policy denies address ${answer}`);
      } finally {
        writePolicy(BASE_POLICY);
      }
    });
  deniedEmbedding("E115-deny-v4-matches-nat64", "nat64.dns.test", "64:ff9b::7f00:1");
  deniedEmbedding("E116-deny-v4-matches-nat64-local", "nat64l.dns.test", "64:ff9b:1:2a::7f00:1");
  deniedEmbedding("E117-deny-v4-matches-6to4", "6to4.dns.test", "2002:7f00:1::1");
  deniedEmbedding("E118-deny-v4-matches-teredo", "teredo.dns.test", "2001:0:4136:e378:8000:63bf:80ff:fffe");
  deniedEmbedding("E119-deny-v4-matches-compatible", "compat.dns.test", "::7f00:1");
  deniedEmbedding("E120-deny-v4-matches-translated", "xlat.dns.test", "::ffff:0:7f00:1");

  matrix("E121-allow-rule-names-every-embedding", async () => {
    // With loopback switched off, a named loopback answer stops at the operator's switch;
    // one no rule names stops earlier, at address:loopback. Every form is named by 127.0.0.1.
    writePolicy(BASE_POLICY.replace("allow_private = true", "allow_private = false"));
    const forms = [
      "::ffff:7f00:1",
      "64:ff9b::7f00:1",
      "64:ff9b:1:2a::7f00:1",
      "2002:7f00:1::1",
      "2001:0:4136:e378:8000:63bf:80ff:fffe",
      "::7f00:1",
      "::ffff:0:7f00:1",
    ];
    const [a] = mark(api);
    try {
      for (const form of forms) {
        zone.set("api.test", [v6(form)]);
        expectDenied(
          await call({ url: `http://api.test:${P1}/v1/echo` }),
          "operator:no-private",
          `the operator's policy forbids loopback addresses (${form})`,
        );
      }
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      zone.set("api.test", [v4("127.0.0.1")]);
      writePolicy(BASE_POLICY);
    }
  });

  matrix("E122-deny-written-in-nat64-form", async () => {
    writePolicy(`${BASE_POLICY}deny = ["http://[64:ff9b::7f00:0/104]"]\n`);
    const [a] = mark(api);
    try {
      expectDenied(
        await call({ url: `http://api.test:${P1}/v1/echo` }),
        "operator:deny http://[64:ff9b::7f00:0/104]",
        "the operator's policy denies address 127.0.0.1",
      );
      expect(newHits(api, a!)).toEqual([]);
    } finally {
      writePolicy(BASE_POLICY);
    }
    expectAllowed(await call({ url: `http://api.test:${P1}/v1/echo` }), `http://api.test:${P1}/v1`);
  });
});

// ---------------------------------------------------------------------------
// Completeness
// ---------------------------------------------------------------------------

describe("the matrix itself", () => {
  test("the revocation (E83) stopped the extension's satellites in every session: after re-approval a fresh one serves", async () => {
    const c = await call({ url: `http://api.test:${P1}/v1/echo` });
    expect(c.reply!.boot).not.toBe(mainBoot);
  });

  test("every case has a recorded verdict", () => {
    const missing = CASES.map(([id]) => id).filter((id) => !verdicts.has(id));
    expect(missing).toEqual([]);
    expect(new Set(CASES.map(([id]) => id)).size).toBe(CASES.length);
    expect(CASES.length).toBeGreaterThanOrEqual(40);
  });

  test("docs/egress.md lists every case id", () => {
    const doc = readFileSync(join(REPO, "docs/egress.md"), "utf8");
    expect(CASES.map(([id]) => id).filter((id) => !doc.includes(id))).toEqual([]);
  });
});
