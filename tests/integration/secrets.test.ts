/**
 * Secrets the broker injects (docs/secrets.md), over a real jailed satellite
 * (tests/integration/fixtures/secret-fetcher), real HTTP servers on loopback
 * and the real `tether` binary for `tether secret`:
 *
 * - the header and the query parameter arrive at the server with the value;
 * - a URL under an unbound rule, an unset secret, the extension setting the
 *   header itself: refused by rule, with what to do;
 * - a redirect from a bound rule to an unbound one goes without the secret;
 * - a server echoing the value (headers, body) is seen as `[secret]`;
 * - the leak test: a random value, used in calls that succeed and fail, is
 *   nowhere in the home (store, WAL, logs, artifacts) nor in any frame the
 *   broker sent to the satellite.
 */
import { randomBytes } from "node:crypto";
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from "node:zlib";
import { secretEncodings } from "../../broker/secrets/encodings.js";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import type { CapCallEvent } from "../../broker/caps/dispatcher.js";
import type { Resolver } from "../../broker/egress/judge.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";
import { SatelliteConnection } from "../../broker/satellite/connection.js";
import { encodeFrame } from "../../jail-runtime/wire/codec.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const BIN = join(REPO, "bin", "tether.js");
const EXT = "secret-fetcher";
const SLOW = 90_000;

interface Hit {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
}

/** A server recording each request; `/redirect?to=` redirects, `/reflect` echoes the authorization in headers and body, else JSON echo. */
async function startServer(name: string): Promise<{ server: Server; port: number; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    hits.push({ path: req.url ?? "", headers: req.headers });
    const u = new URL(req.url ?? "/", "http://placeholder");
    const to = u.searchParams.get("to");
    if (u.pathname.endsWith("/redirect") && to !== null) {
      res.writeHead(302, { location: to });
      res.end();
      return;
    }
    if (u.pathname.endsWith("/bounce")) {
      // Back to /echo with the query as it came: the Location holds a query secret.
      res.writeHead(302, { location: `${u.pathname.replace(/bounce$/, "echo")}${u.search}` });
      res.end();
      return;
    }
    if (u.pathname.endsWith("/drop")) {
      req.socket.destroy();
      return;
    }
    const auth = req.headers.authorization ?? u.searchParams.get("api_key") ?? "";
    const token = auth.replace(/^Bearer /, "");
    const how = u.searchParams.get("how");
    if (u.pathname.endsWith("/mirror") && how !== null) {
      // A hostile reflector: the token back in the encoding asked for, in a header and inside a body.
      const [body, header] = mirrored(token, how);
      const headers: Record<string, string> = { "content-type": "text/plain", "x-mirror": header };
      const coding = u.searchParams.get("coding");
      let bytes = Buffer.from(body, "latin1");
      if (coding === "gzip") bytes = gzipSync(bytes);
      else if (coding === "deflate") bytes = deflateSync(bytes);
      else if (coding === "deflate-raw") bytes = deflateRawSync(bytes);
      else if (coding === "br") bytes = brotliCompressSync(bytes);
      else if (coding === "bomb") bytes = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x61));
      else if (coding === "zstd") bytes = Buffer.from("not really zstd");
      if (coding !== null)
        headers["content-encoding"] = coding === "deflate-raw" ? "deflate" : coding === "bomb" ? "gzip" : coding;
      res.writeHead(200, headers);
      res.end(bytes);
      return;
    }
    if (u.pathname.endsWith("/to-other")) {
      // The token re-encoded (base64url) into a redirect's query, to another host.
      res.writeHead(302, {
        location: `http://other.test:${P2}/landing?t=${Buffer.from(token).toString("base64url")}&u=${encodeURIComponent(token.toUpperCase())}`,
      });
      res.end();
      return;
    }
    if (u.pathname.endsWith("/reflect")) {
      res.writeHead(200, { "content-type": "text/plain", "x-echo": auth, "x-token": token });
      res.end(`you sent ${auth}; the token is ${token}.`);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ server: name, path: req.url, headers: req.headers }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

/** The token as a hostile server would reflect it: [body, header] for the encoding named `how`. */
function mirrored(token: string, how: string): [string, string] {
  const offset = /^b64-offset-(\d)(-url)?$/.exec(how);
  if (offset !== null) {
    // Inside a longer base64 run, at a byte offset: only part of the run is the token's.
    const run = Buffer.concat([randomBytes(Number(offset[1])), Buffer.from(token), randomBytes(5)]).toString(
      offset[2] ? "base64url" : "base64",
    );
    return [`data=${run};`, run];
  }
  if (how === "hex-upper")
    return [`<${Buffer.from(token).toString("hex").toUpperCase()}>`, Buffer.from(token).toString("hex").toUpperCase()];
  if (how === "upper") return [`TOKEN=${token.toUpperCase()}`, token.toUpperCase()];
  if (how === "plain") return [`the token is ${token}.`, token];
  const form = secretEncodings(token).find((e) => e.name === how);
  if (form === undefined) throw new Error(`no encoding ${how}`);
  return [`{"echo": "${form.text}"}`, form.text];
}

const resolve: Resolver = async (name) => {
  if (name === "api.test" || name === "other.test") return [{ address: "127.0.0.1", family: 4 }];
  throw new Error(`getaddrinfo ENOTFOUND ${name}`);
};

let tmp: string;
let home: string;
let broker: Broker;
let api: Awaited<ReturnType<typeof startServer>>;
let other: Awaited<ReturnType<typeof startServer>>;
let P1 = 0;
let P2 = 0;
// With the characters escapes treat specially (/ + = & < > " '), so every escaping has something to escape.
const TOKEN = `tok_${randomBytes(12).toString("hex")}/+=&<>"'${randomBytes(6).toString("base64url")}`;
const KEY = `key_${randomBytes(16).toString("hex")}`;
/** Every frame the broker sent to a satellite, encoded as on the wire. */
const frames: Buffer[] = [];
/** Every line the broker logged (any level). */
const logged: string[] = [];
const hookEvents: CapCallEvent[] = [];
const originalSend = SatelliteConnection.prototype.send;

function manifest(): string {
  const bound = `http://api.test:${P1}/v1`;
  return `name = "${EXT}"
version = "1.0.0"
description = "Fetches a URL through the broker, naming a secret when told to."
entry = "index.ts"

[[tool]]
name = "fetch"
description = "Fetches a URL with net.fetch."
parameters = { type = "object", properties = { url = { type = "string" }, method = { type = "string" }, headers = { type = "object" }, secret = { type = "string" } }, required = ["url"] }

[net]
allow = ["${bound}", "http://api.test:${P1}/free", "http://api.test:${P1}/q", "http://api.test:${P1}/unset", "http://other.test:${P2}", "http://127.0.0.1:${P1}", "http://127.0.0.1:${P2}"]

[[secret]]
name = "api_token"
description = "A token for api.test, sent as a bearer token."
rules = ["${bound}"]
header = "Authorization"
format = "Bearer {}"

[[secret]]
name = "api_key"
description = "A key for api.test, sent in the query."
rules = ["http://api.test:${P1}/q"]
query = "api_key"

[[secret]]
name = "never_set"
description = "Declared, approved, never set."
rules = ["http://api.test:${P1}/unset"]
header = "X-Api-Key"

[limits]
memory_mb = 64
deadline_ms = 5000
`;
}

async function tether(input: string | undefined, ...args: string[]) {
  const r = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    ...(input !== undefined ? { input } : { stdin: "ignore" as const }),
    reject: false,
    timeout: 45_000,
  });
  return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

interface Reply {
  readonly ok: boolean;
  readonly status?: number;
  readonly url?: string;
  readonly body?: string;
  readonly headers?: Array<[string, string]>;
  readonly code?: string;
  readonly message?: string;
}

interface AuditRow {
  readonly target: string;
  readonly decision: string;
  readonly rule: string;
  readonly secret: string | null;
}

async function call(args: {
  url: string;
  secret?: string;
  headers?: Record<string, string>;
}): Promise<{ reply: Reply; rows: AuditRow[] }> {
  broker.ledger.flush();
  const before = (
    broker.store.sqlite.prepare("select coalesce(max(id), 0) as id from cap_audit").get() as { id: number }
  ).id;
  const outcome = await broker.callTool(EXT, "fetch", JSON.stringify(args), { session: "default" });
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select target, decision, rule, secret from cap_audit where id > ? order by id")
    .all(before) as AuditRow[];
  if (!outcome.ok) throw new Error(`the call failed: ${outcome.error.code}: ${outcome.error.msg}`);
  const reply = outcome.value.content.find((c) => c.type === "json")?.json as Reply;
  return { reply, rows };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-secrets-"));
  home = join(tmp, "home");
  api = await startServer("api");
  other = await startServer("other");
  P1 = api.port;
  P2 = other.port;
  SatelliteConnection.prototype.send = function (this: SatelliteConnection, frame) {
    frames.push(Buffer.from(encodeFrame(frame)));
    return originalSend.call(this, frame);
  };
  const log = createLogger({
    level: "debug",
    sink: (level, msg, fields) => logged.push(`${level} ${msg} ${JSON.stringify(fields)}`),
  });
  broker = Broker.open({
    ...envOptions(),
    home,
    resolve,
    log,
    capHooks: async (event) => (hookEvents.push(event), null),
  });
  writeFileSync(join(home, "policy.toml"), "[net]\nallow_private = true\n");
  const src = join(tmp, "src", EXT);
  mkdirSync(src, { recursive: true });
  cpSync(join(REPO, "tests/integration/fixtures/secret-fetcher/index.ts"), join(src, "index.ts"));
  writeFileSync(join(src, "manifest.toml"), manifest());
  await broker.registry.install(src);
  broker.registry.approve(EXT);
}, 60_000);

afterAll(async () => {
  SatelliteConnection.prototype.send = originalSend;
  await broker?.destroy();
  for (const s of [api, other]) {
    s?.server.closeAllConnections();
    await new Promise<void>((done) => (s === undefined ? done() : s.server.close(() => done())));
  }
  rmSync(tmp, { recursive: true, force: true });
});

describe("tether secret, the real binary", () => {
  test(
    "set reads stdin, never argv; the file is 0600 in a 0700 folder; list shows names, never values",
    async () => {
      const [argv, set, key] = await Promise.all([
        tether(undefined, "secret", "set", EXT, "api_token", TOKEN),
        tether(`${TOKEN}\n`, "secret", "set", EXT, "api_token"),
        tether(KEY, "secret", "set", EXT, "api_key"),
      ]);
      expect(argv.code).toBe(2);
      expect(argv.stderr).toContain("a secret's value is never taken from the command line");
      expect(argv.stderr).not.toContain(TOKEN);
      const file = join(home, "secrets", `${EXT}.api_token`);
      // stderr first: a failure then says why.
      expect([set.stderr, key.stderr]).toEqual(["", ""]);
      expect(set).toMatchObject({ code: 0, stdout: `set ${EXT}'s secret api_token (in ${file}, mode 0600)` });
      expect(key.code).toBe(0);
      expect(statSync(join(home, "secrets")).mode & 0o777).toBe(0o700);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      // One trailing line break is not part of the value; the two sets at once lost nothing.
      expect(readFileSync(file, "utf8")).toBe(TOKEN);
      expect(readFileSync(join(home, "secrets", `${EXT}.api_key`), "utf8")).toBe(KEY);

      const [list, undeclared, short, doctor] = await Promise.all([
        tether(undefined, "secret", "list"),
        tether("abcdefghij", "secret", "set", EXT, "nope"),
        tether("abc", "secret", "set", EXT, "never_set"),
        tether(undefined, "doctor", "--json"),
      ]);
      const checks = JSON.parse(doctor.stdout) as Array<{ name: string; ok: boolean; detail: string }>;
      expect(checks.find((c) => c.name === "secrets")).toEqual({
        name: "secrets",
        ok: true,
        detail: `1 of 3 approved secrets NOT SET (requests naming them are refused): tether secret set ${EXT} never_set`,
      });
      expect(list.code).toBe(0);
      expect(list.stdout).toContain(
        `${EXT} api_token: set\n    sent as Authorization: Bearer … to http://api.test:${P1}/v1`,
      );
      expect(list.stdout).toContain(`${EXT} api_key: set\n    sent as ?api_key=… to http://api.test:${P1}/q`);
      expect(list.stdout).toContain(`${EXT} never_set: NOT SET (tether secret set ${EXT} never_set)`);
      expect(list.stdout + list.stderr).not.toContain(TOKEN);
      expect(undeclared).toMatchObject({
        code: 1,
        stderr: `tether secret: '${EXT}' declares no secret 'nope' (it declares: api_token, api_key, never_set)`,
      });
      expect(short.code).toBe(2);
      expect(short.stderr).toContain("shorter than 8 characters");
    },
    SLOW,
  );

  test(
    "set --file reads the file; unset removes the value",
    async () => {
      const file = join(tmp, "value.txt");
      writeFileSync(file, "from-a-file-12345\n", { mode: 0o600 });
      const set = await tether(undefined, "secret", "set", EXT, "never_set", "--file", file);
      expect(set.code).toBe(0);
      expect(readFileSync(join(home, "secrets", `${EXT}.never_set`), "utf8")).toBe("from-a-file-12345");
      const unset = await tether(undefined, "secret", "unset", EXT, "never_set");
      expect(unset).toMatchObject({ code: 0, stdout: `unset ${EXT}'s secret never_set` });
      expect(readdirSync(join(home, "secrets")).sort()).toEqual([`${EXT}.api_key`, `${EXT}.api_token`]);
    },
    SLOW,
  );

  test("review shows each secret, where it goes and whether it is set", () => {
    const installed = broker.registry.require(EXT);
    const text = renderReview(
      buildReview(installed, broker.registry.status(installed), broker.registry.latestApproval(EXT), {
        secretSet: (n) => n !== "never_set",
      }),
      installed,
    );
    expect(text).toContain(`    api_token — sent as Authorization: Bearer … to http://api.test:${P1}/v1 (set)`);
    expect(text).toContain(
      `    never_set — sent as X-Api-Key: … to http://api.test:${P1}/unset (NOT SET: tether secret set ${EXT} never_set)`,
    );
    // What redaction cannot promise is said for every rule a secret is bound to.
    expect(text).toContain(
      `      note: any server under http://api.test:${P1}/v1 can hand it back in a form the broker does not recognise (a hash, a byte per response); bind it to that API alone`,
    );
    expect(text).toContain(`      note: any server under http://api.test:${P1}/q can hand it back`);
  });
});

describe("injection", () => {
  test(
    "the header arrives at the server with the value; the extension sees [secret]; the audit names the secret",
    async () => {
      const before = api.hits.length;
      const { reply, rows } = await call({ url: `http://api.test:${P1}/v1/echo`, secret: "api_token" });
      expect(reply).toMatchObject({ ok: true });
      expect(api.hits.slice(before).map((h) => h.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
      expect(JSON.parse(reply.body!).headers.authorization).toBe("[secret]");
      expect(rows).toEqual([
        {
          target: `http://api.test:${P1}/v1/echo`,
          decision: "allowed",
          rule: `http://api.test:${P1}/v1`,
          secret: "api_token",
        },
      ]);
      // What the hooks were shown holds no value either.
      expect(JSON.stringify(hookEvents)).not.toContain(TOKEN);
    },
    SLOW,
  );

  test(
    "a query-parameter secret arrives in the query; the response url is the one the extension wrote",
    async () => {
      const before = api.hits.length;
      const { reply, rows } = await call({ url: `http://api.test:${P1}/q/echo?x=1`, secret: "api_key" });
      expect(reply).toMatchObject({ ok: true });
      expect(api.hits.slice(before).map((h) => h.path)).toEqual([`/q/echo?x=1&api_key=${KEY}`]);
      expect(reply.url).toBe(`http://api.test:${P1}/q/echo?x=1`);
      expect(JSON.parse(reply.body!).path).toBe("/q/echo?x=1&api_key=[secret]");
      expect(rows.map((r) => [r.decision, r.secret])).toEqual([["allowed", "api_key"]]);
    },
    SLOW,
  );

  test(
    "a URL under a rule the secret is not bound to is refused by rule, and never sent",
    async () => {
      const before = api.hits.length;
      const { reply, rows } = await call({ url: `http://api.test:${P1}/free/x`, secret: "api_token" });
      expect(reply).toMatchObject({ ok: false, code: "denied" });
      expect(reply.message).toContain(`(rule: secret:api_token not bound to http://api.test:${P1}/free)`);
      expect(api.hits.length).toBe(before);
      expect(rows.map((r) => [r.decision, r.rule])).toEqual([
        ["denied", `secret:api_token not bound to http://api.test:${P1}/free`],
      ]);
    },
    SLOW,
  );

  test(
    "an unset secret is refused naming the command the operator must run",
    async () => {
      const before = api.hits.length;
      const { reply } = await call({ url: `http://api.test:${P1}/unset/x`, secret: "never_set" });
      expect(reply).toMatchObject({ ok: false, code: "denied" });
      expect(reply.message).toBe(
        `net.fetch refused: secret 'never_set' is not set; the operator must run: tether secret set ${EXT} never_set (rule: secret:never_set not set)`,
      );
      expect(api.hits.length).toBe(before);
    },
    SLOW,
  );

  test(
    "the extension setting the header itself while naming the secret is refused; an unknown secret too",
    async () => {
      const before = api.hits.length;
      const own = await call({
        url: `http://api.test:${P1}/v1/echo`,
        secret: "api_token",
        headers: { authorization: "Bearer mine" },
      });
      expect(own.reply.message).toContain("do not set Authorization yourself (rule: secret:api_token header)");
      const unknown = await call({ url: `http://api.test:${P1}/v1/echo`, secret: "nope" });
      expect(unknown.reply.message).toContain("(rule: secret:nope unknown)");
      expect(api.hits.length).toBe(before);
    },
    SLOW,
  );

  test(
    "a redirect from a bound rule to an unbound one is followed without the secret",
    async () => {
      const [a, o] = [api.hits.length, other.hits.length];
      const to = `http://other.test:${P2}/landing`;
      const { reply, rows } = await call({
        url: `http://api.test:${P1}/v1/redirect?to=${encodeURIComponent(to)}`,
        secret: "api_token",
      });
      expect(reply).toMatchObject({ ok: true });
      expect(api.hits.slice(a).map((h) => h.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
      expect(other.hits.slice(o).map((h) => h.headers.authorization)).toEqual([undefined]);
      expect(rows.map((r) => [r.decision, r.secret])).toEqual([
        ["allowed", "api_token"],
        ["allowed", null],
      ]);
    },
    SLOW,
  );

  test(
    "a server echoing the value in headers and body: the extension sees [secret]",
    async () => {
      const { reply } = await call({ url: `http://api.test:${P1}/v1/reflect`, secret: "api_token" });
      expect(reply).toMatchObject({ ok: true });
      expect(reply.body).toBe("you sent [secret]; the token is [secret].");
      const headers = new Map(reply.headers);
      expect(headers.get("x-echo")).toBe("[secret]");
      expect(headers.get("x-token")).toBe("[secret]");
      expect(JSON.stringify(reply)).not.toContain(TOKEN);
    },
    SLOW,
  );
});

/** Whether `text` gives the token back: any generated encoding, case-folded where it is matched so, or any base64 run that decodes to it. */
function leaks(text: string): string[] {
  const found = secretEncodings(TOKEN)
    .filter((e) => (e.anyCase ? text.toLowerCase().includes(e.text.toLowerCase()) : text.includes(e.text)))
    .map((e) => e.name);
  for (const run of text.match(/[A-Za-z0-9+/_-]{16,}={0,2}/g) ?? []) {
    for (const kind of ["base64", "base64url"] as const)
      if (Buffer.from(run, kind).includes(Buffer.from(TOKEN))) found.push(`a ${kind} run`);
  }
  return found;
}

describe("every encoding of the secret a server reflects comes back as [secret]", () => {
  const HOWS = [
    ...secretEncodings(TOKEN).map((e) => e.name),
    "plain",
    "upper",
    "hex-upper",
    ...[0, 1, 2].flatMap((o) => [`b64-offset-${o}`, `b64-offset-${o}-url`]),
  ];

  test("the probes can fail: each reflection holds the token in a form the checker sees", () => {
    for (const how of HOWS) expect([how, leaks(mirrored(TOKEN, how).join(" ")).length > 0]).toEqual([how, true]);
  });

  test.each(HOWS)(
    "%s, in a header and the body",
    async (how) => {
      const { reply } = await call({
        url: `http://api.test:${P1}/v1/mirror?how=${encodeURIComponent(how)}`,
        secret: "api_token",
      });
      expect(reply).toMatchObject({ ok: true });
      expect(reply.body).toContain("[secret]");
      expect(leaks(JSON.stringify(reply))).toEqual([]);
    },
    SLOW,
  );

  test.each(["gzip", "deflate", "deflate-raw", "br"])(
    "compressed (%s) whatever the extension asked: the broker asked, decoded and redacted",
    async (coding) => {
      const hits = api.hits.length;
      const { reply } = await call({
        url: `http://api.test:${P1}/v1/mirror?how=plain&coding=${coding}`,
        secret: "api_token",
        headers: { "accept-encoding": "gzip" },
      });
      expect(reply).toMatchObject({ ok: true, body: "the token is [secret]." });
      expect(new Map(reply.headers).has("content-encoding")).toBe(false);
      expect(api.hits.slice(hits).map((h) => h.headers["accept-encoding"])).toEqual(["gzip, deflate, br"]);
      expect(leaks(JSON.stringify(reply))).toEqual([]);
    },
    SLOW,
  );

  test(
    "a coding the broker did not ask for, and a body that expands past the bound, are refused",
    async () => {
      const odd = await call({ url: `http://api.test:${P1}/v1/mirror?how=plain&coding=zstd`, secret: "api_token" });
      expect(odd.reply).toMatchObject({ ok: false, code: "unreachable" });
      expect(odd.reply.message).toContain("content-encoding 'zstd' is not one the broker asked for");
      const bomb = await call({ url: `http://api.test:${P1}/v1/mirror?how=plain&coding=bomb`, secret: "api_token" });
      expect(bomb.reply).toMatchObject({ ok: false, code: "denied" });
      expect(bomb.reply.message).toContain("once decoded");
    },
    SLOW,
  );

  test(
    "a redirect re-encoding the token into another host's query: the next hop, the extension's URL and the audit hold none of it",
    async () => {
      const o = other.hits.length;
      const { reply, rows } = await call({ url: `http://api.test:${P1}/v1/to-other`, secret: "api_token" });
      expect(reply).toMatchObject({ ok: true });
      expect(other.hits.slice(o).map((h) => leaks(decodeURIComponent(h.path)))).toEqual([[]]);
      expect(leaks(JSON.stringify(reply))).toEqual([]);
      expect(rows.map((r) => r.target)).toEqual([
        `http://api.test:${P1}/v1/to-other`,
        `http://other.test:${P2}/landing?t=…&u=…`,
      ]);
    },
    SLOW,
  );
});

/** Every file under `dir` but the secrets folder, with its bytes. */
function filesUnder(dir: string): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join(home, "secrets")) out.push(...filesUnder(path));
    } else if (entry.isFile()) out.push([path, readFileSync(path)]);
  }
  return out;
}

describe("the leak test", () => {
  test(
    "the value is in no byte the broker wrote to its home and in no frame it sent to the satellite",
    async () => {
      // More uses, failures among them: a dropped connection, a body echo, a query echo, refusals.
      const drop = await call({ url: `http://api.test:${P1}/v1/drop`, secret: "api_token" });
      expect(drop.reply).toMatchObject({ ok: false, code: "unreachable" });
      await call({ url: `http://api.test:${P1}/q/reflect`, secret: "api_key" });
      await call({
        url: `http://api.test:${P1}/q/redirect?to=${encodeURIComponent(`http://api.test:${P1}/q/echo`)}`,
        secret: "api_key",
      });
      await call({ url: `http://other.test:${P2}/x`, secret: "api_token" });
      // A redirect whose Location echoes the query secret: followed with it redacted, then the broker's value again.
      const hits = api.hits.length;
      const bounce = await call({ url: `http://api.test:${P1}/q/bounce?x=1`, secret: "api_key" });
      expect(api.hits.slice(hits).map((h) => h.path)).toEqual([
        `/q/bounce?x=1&api_key=${KEY}`,
        `/q/echo?x=1&api_key=${KEY}`,
      ]);
      expect(bounce.reply.url).toBe(`http://api.test:${P1}/q/echo?x=1&api_key=[secret]`);
      // The audit keeps no query value at all (names only): what a redirect put there is never written down.
      expect(bounce.rows.map((r) => [r.target, r.secret])).toEqual([
        [`http://api.test:${P1}/q/bounce?x=…`, "api_key"],
        [`http://api.test:${P1}/q/echo?x=…&api_key=…`, "api_key"],
      ]);
      broker.ledger.flush();
      expect(frames.length).toBeGreaterThan(10);
      // The search finds what is there: the value in its own file, [secret] in the frames.
      const [, stored] = readdirSync(join(home, "secrets"))
        .map((f) => readFileSync(join(home, "secrets", f)))
        .filter((b) => b.includes(Buffer.from(TOKEN)))
        .entries()
        .next().value!;
      expect(stored.toString()).toBe(TOKEN);
      expect(frames.some((f) => f.includes(Buffer.from("[secret]")))).toBe(true);
      expect(logged.length).toBeGreaterThan(0);

      // Every generated encoding of each value, case-folded where it is matched so.
      const needles = [...secretEncodings(TOKEN), ...secretEncodings(`Bearer ${TOKEN}`), ...secretEncodings(KEY)];
      const found = (bytes: Buffer) => {
        const text = bytes.toString("latin1");
        const folded = text.toLowerCase();
        return needles
          .filter((n) => (n.anyCase ? folded.includes(n.text.toLowerCase()) : text.includes(n.text)))
          .map((n) => n.name);
      };
      const scan = () => filesUnder(home).flatMap(([path, bytes]) => found(bytes).map((n) => `${path}: ${n}`));

      const files = filesUnder(home).map(([path]) => path);
      expect(files).toEqual(expect.arrayContaining([join(home, "tether.db"), join(home, "tether.db-wal")]));
      expect(scan()).toEqual([]);
      expect(frames.flatMap(found)).toEqual([]);
      expect(logged.flatMap((line) => found(Buffer.from(line)))).toEqual([]);
      // And after the store is checkpointed and closed.
      await broker.close();
      expect(scan()).toEqual([]);
    },
    SLOW,
  );
});
