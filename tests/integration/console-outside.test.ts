/**
 * The console attacked from outside (docs/console.md): a web page or a
 * network neighbour — DNS rebinding through every spelling of a Host, also
 * through a forward onto the Unix socket (`socat`, as the docs suggest);
 * login CSRF in every shape (another origin, `null`, cross-site
 * Sec-Fetch-Site, `text/plain` and `multipart/form-data` bodies, a GET);
 * cookie tossing (another cookie of the same name sent first) and session
 * fixation; a slow body (slowloris); failed sign-ins without bound; audit
 * query strings that ask for times no date can hold.
 */
import { once } from "node:events";
import { request } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import {
  ConsoleClient,
  TOKEN,
  expectSecurityHeaders,
  registryRows,
  startConsole,
  type ConsoleRig,
} from "./support/console-client.js";
import { envOptions } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";
import { execa } from "execa";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";

let rig: ConsoleRig;
let port: number;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request with exactly these headers (fetch will not send a Host of our choosing). */
function raw(
  where: { port: number } | { socketPath: string },
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...("port" in where ? { host: "127.0.0.1", port: where.port } : { socketPath: where.socketPath }),
        method,
        path,
        headers,
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

beforeAll(async () => {
  // A short body deadline, so the slow body's 408 comes soon (the test waits for it, not for a time).
  rig = await startConsole("tether-console-outside-", async () => {}, { consoleBodyMs: 300 });
  port = Number(new URL(rig.base).port);
});

afterAll(async () => {
  await rig?.stop();
});

describe("DNS rebinding: only a loopback name, however it is spelled", () => {
  const refused = [
    "127.0.0.1.nip.io",
    "localhost.",
    "localhost.evil.example",
    "evil.example",
    "127.1",
    "2130706433",
    "0x7f.0.0.1",
    "[::ffff:127.0.0.1]",
    "[0:0:0:0:0:0:0:1]",
    "127.0.0.1:80:80",
    "127.0.0.1@evil.example",
    "",
  ];
  test.each(refused)("Host %j is refused (403), with the security headers", async (host) => {
    const answer = await raw({ port }, "GET", "/console/login", { host });
    expect([host, answer.status]).toEqual([host, answer.status === 400 ? 400 : 403]);
    if (answer.status === 403) expectSecurityHeaders(new Headers(answer.headers as Record<string, string>));
  });
  test.each(["127.0.0.1", "127.0.0.1:PORT", "LOCALHOST", "localhost:PORT", "[::1]", "[::1]:PORT"])(
    "Host %j is served",
    async (spelled) => {
      const host = spelled.replace("PORT", String(port));
      expect((await raw({ port }, "GET", "/console/login", { host })).status).toBe(200);
    },
  );
});

describe("DNS rebinding through a forward onto the Unix socket", () => {
  let server: ServeServer;
  let socketPath: string;
  beforeAll(async () => {
    const tmp = mkdtempSync(join(tmpdir(), "tether-console-socket-"));
    const broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: silentLogger });
    writeFileSync(join(broker.home, "policy.toml"), "");
    server = new ServeServer({ broker, token: TOKEN, log: silentLogger, say: () => {} });
    socketPath = join(tmp, "t.sock");
    await server.listen({ socket: socketPath });
  });
  afterAll(async () => {
    await server?.shutdown(Promise.resolve());
  });
  test("a page whose own name was pointed at the forward is refused, as over TCP", async () => {
    const answer = await raw({ socketPath }, "GET", "/console/login", { host: "evil.example:8080" });
    expect(answer.status).toBe(403);
    const signIn = await raw(
      { socketPath },
      "POST",
      "/console/login",
      {
        host: "evil.example:8080",
        origin: "http://evil.example:8080",
        "content-type": "application/x-www-form-urlencoded",
      },
      `token=${TOKEN}`,
    );
    expect(signIn.status).toBe(403);
    expect(signIn.headers["set-cookie"]).toBeUndefined();
  });
  test("the forward's loopback name is served", async () => {
    expect((await raw({ socketPath }, "GET", "/console/login", { host: "127.0.0.1:8080" })).status).toBe(200);
  });
});

describe("login CSRF: the sign-in only from the console's own page", () => {
  const host = () => `127.0.0.1:${port}`;
  const form = `token=${TOKEN}&operator=mallory`;
  const shapes: Array<[string, Record<string, string>, string]> = [
    ["another origin", { origin: "http://127.0.0.2:9000", "content-type": "application/x-www-form-urlencoded" }, form],
    ["another port", { origin: "http://127.0.0.1:1", "content-type": "application/x-www-form-urlencoded" }, form],
    [
      "the null origin (sandboxed frame, data: URL)",
      { origin: "null", "content-type": "application/x-www-form-urlencoded" },
      form,
    ],
    [
      "no Origin, Sec-Fetch-Site cross-site",
      { "sec-fetch-site": "cross-site", "content-type": "application/x-www-form-urlencoded" },
      form,
    ],
    [
      "no Origin, Sec-Fetch-Site same-site",
      { "sec-fetch-site": "same-site", "content-type": "application/x-www-form-urlencoded" },
      form,
    ],
    ["text/plain", { "content-type": "text/plain" }, form],
    [
      "multipart/form-data",
      { "content-type": "multipart/form-data; boundary=x" },
      `--x\r\ncontent-disposition: form-data; name="token"\r\n\r\n${TOKEN}\r\n--x--\r\n`,
    ],
    [
      "urlencoded with its type's case changed and a parameter",
      { origin: "http://evil.example", "content-type": "Application/X-WWW-Form-Urlencoded; charset=utf-8" },
      form,
    ],
  ];
  test.each(shapes)("%s: refused, no cookie", async (_what, headers, body) => {
    const answer = await raw({ port }, "POST", "/console/login", { host: host(), ...headers }, body);
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.headers["set-cookie"]).toBeUndefined();
  });
  test("a GET with the token on the query string signs nothing in; a method override is no POST", async () => {
    const get = await raw({ port }, "GET", `/console/login?token=${TOKEN}`, { host: host() });
    expect(get.headers["set-cookie"]).toBeUndefined();
    const override = await raw({ port }, "GET", `/console/login?token=${TOKEN}&_method=POST`, {
      host: host(),
      "x-http-method-override": "POST",
    });
    expect(override.headers["set-cookie"]).toBeUndefined();
  });
});

describe("redirects", () => {
  test("no parameter picks where a redirect goes: next= and back= are ignored, and a path that reads as another host stays here", async () => {
    const client = new ConsoleClient(rig.base);
    const signIn = await client.request("POST", "/console/login?next=https://evil.example/&back=//evil.example", {
      body: new URLSearchParams({ token: TOKEN }),
      headers: { origin: rig.base, "sec-fetch-site": "same-origin" },
      cookie: null,
    });
    expect(signIn.headers.get("location")).toBe("/console/");
    const bare = await raw({ port }, "GET", "/console?next=//evil.example", { host: `127.0.0.1:${port}` });
    expect(bare.headers.location).toBe("/console/");
    const slashes = await raw({ port }, "GET", "//evil.example/console/", { host: `127.0.0.1:${port}` });
    expect(slashes.headers.location ?? "").not.toMatch(/evil/);
  });
});

describe("cookies", () => {
  test("session fixation: a cookie value the attacker chose is no session, and signing in hands out a fresh one", async () => {
    const client = new ConsoleClient(rig.base);
    const chosen = `tether_console=${"A".repeat(43)}`;
    expect((await client.request("GET", "/console/", { cookie: chosen })).status).toBe(303);
    const answer = await client.request("POST", "/console/login", {
      body: new URLSearchParams({ token: TOKEN }),
      headers: { origin: rig.base, "sec-fetch-site": "same-origin" },
      cookie: chosen,
    });
    expect(answer.status).toBe(303);
    const set = answer.headers.get("set-cookie")!;
    expect(set).not.toContain("A".repeat(43));
    expect(set).toMatch(/^tether_console=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/console/);
  });

  test("cookie tossing: a cookie of the same name set from another port (sent first) neither signs the operator out nor in", async () => {
    const client = new ConsoleClient(rig.base);
    await client.login(undefined, "alice");
    const tossed = `tether_console=tossed-by-a-neighbour; ${client.cookie}`;
    const page = await client.request("GET", "/console/", { cookie: tossed });
    expect(page.status).toBe(200);
    expect(page.text).toContain("signed in as alice");
    const after = `${client.cookie}; tether_console=tossed-by-a-neighbour`;
    expect((await client.request("GET", "/console/", { cookie: after })).status).toBe(200);
  });
});

describe("bodies", () => {
  test("a body that never finishes is answered 408 at the deadline, not held open", async () => {
    const socket = connect(port, "127.0.0.1");
    await once(socket, "connect");
    socket.write(
      `POST /console/login HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 1000\r\n\r\ntoken=`,
    );
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    await once(socket, "close");
    expect(Buffer.concat(chunks).toString("utf8")).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe("the audit's query string", () => {
  test.each([
    ["to", "99999999999999d"],
    ["from", "99999999999999d"],
    ["from", `${"9".repeat(400)}h`],
    ["to", "+275760-09-13T00:00:00.001Z"],
    ["page", "999999999"],
    ["page", "-5"],
    ["page", "NaN"],
    ["page", "1e3"],
  ])("%s=%s: a page with the problem named, never a 500", async (key, value) => {
    const client = new ConsoleClient(rig.base);
    await client.login();
    const answer = await client.get(`/console/audit?${new URLSearchParams({ [key]: value })}`);
    expect([key, value, answer.status]).toEqual([key, value, 200]);
  });
});

test("the audit's from and to are UTC, as the form says, whatever the server's time zone", async () => {
  // Its own process: jest keeps a copy of the environment, so TZ set here would not reach the clock.
  const script = `import { parseUtcSince } from "./broker/console/utc.ts"; console.log(JSON.stringify(["2026-12-01T10:00", "2026-12-01T12:00:30", "2026-12-01T10:00Z", "2026-12-01T10:00+01:00"].map((t) => new Date(parseUtcSince(t)).toISOString())));`;
  const out = await execa(join(REPO, "node_modules", ".bin", "tsx"), ["--eval", script], {
    cwd: REPO,
    env: { TZ: "America/New_York" },
    reject: false,
  });
  expect(JSON.parse(out.stdout)).toEqual([
    "2026-12-01T10:00:00.000Z",
    "2026-12-01T12:00:30.000Z",
    "2026-12-01T10:00:00.000Z",
    "2026-12-01T09:00:00.000Z",
  ]);
});

test("nothing the probes did changed the registry", () => {
  expect(registryRows(rig.broker)).toBe("[[],[]]");
});

describe("brute force of the token", () => {
  let own: ConsoleRig;
  beforeAll(async () => {
    own = await startConsole("tether-console-brute-");
  });
  afterAll(async () => {
    await own?.stop();
  });
  test("past 10 wrong tokens in a minute, every sign-in is refused (429, Retry-After) — the right token too — and none signs in", async () => {
    const client = new ConsoleClient(own.base);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i += 1) statuses.push((await client.login(`wrong-${i}`)).status);
    expect(statuses).toEqual(new Array(10).fill(401));
    const right = await client.login();
    expect(right.status).toBe(429);
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(right.headers.get("set-cookie")).toBeNull();
    expect(right.text).toContain("Too many failed sign-ins");
  });
});
