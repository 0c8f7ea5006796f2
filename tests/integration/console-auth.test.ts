/**
 * The console's sign-in and its refusals over real HTTP (a ServeServer on a
 * loopback port, node's fetch): the token for a cookie and its attributes; no
 * cookie: GET → 303 to the login page, POST → 401; and the CSRF probes —
 * a missing csrf field, a wrong one, `Origin: http://evil.example`,
 * `Sec-Fetch-Site: cross-site` — against every state-changing route, each 403
 * with the registry and the live session as they were; the security headers on
 * every kind of response.
 */
import { request as httpRequest } from "node:http";
import { WebSocket } from "ws";
import {
  ConsoleClient,
  TOKEN,
  expectSecurityHeaders,
  registryRows,
  startConsole,
  type ConsoleRig,
  rpcOver,
} from "./support/console-client.js";

let rig: ConsoleRig;
let ws: WebSocket;

const rpc = (method: string, params: unknown) => rpcOver(ws, method, params);

beforeAll(async () => {
  rig = await startConsole("tether-console-auth-", async (broker) => {
    await broker.registry.install("manifests/echo");
    await broker.registry.install("manifests/weather");
    broker.registry.approve("echo");
  });
  ws = new WebSocket(rig.ws, { headers: { Authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const opened = await rpc("session.open", { id: "probe", workspace: rig.tmp });
  expect(opened["result"]).toMatchObject({ id: "probe" });
});

afterAll(async () => {
  ws?.close();
  await rig?.stop();
});

/** Every state-changing route, with the fields that would make it act at once. */
const ROUTES: ReadonlyArray<readonly [string, Record<string, string | string[]>]> = [
  ["/console/ext/weather/approve", { confirm: "yes", rule: "GET http://127.0.0.1:17311/v1" }],
  ["/console/ext/echo/revoke", { confirm: "yes" }],
  ["/console/ext/echo/uninstall", { confirm: "yes" }],
  ["/console/sessions/probe/reload", { confirm: "yes" }],
  ["/console/sessions/probe/close", { confirm: "yes" }],
  ["/console/logout", {}],
];

describe("signing in", () => {
  test("the token gives a random session id in an HttpOnly, SameSite=Strict cookie for /console, not Secure over plain HTTP", async () => {
    const a = new ConsoleClient(rig.base);
    const b = new ConsoleClient(rig.base);
    const first = await a.login();
    const second = await b.login();
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/console/");
    const cookie = first.headers.get("set-cookie")!;
    const attributes = cookie.split(";").map((p) => p.trim());
    expect(attributes[0]).toMatch(/^tether_console=[A-Za-z0-9_-]{43}$/);
    expect(attributes.slice(1).sort()).toEqual(["HttpOnly", "Path=/console", "SameSite=Strict"]);
    expect(a.cookie).not.toBe(b.cookie);
    expect(cookie).not.toContain(TOKEN);
    expectSecurityHeaders(first.headers);
    const list = await a.get("/console/");
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(TOKEN);
  });

  test("a wrong token is a 401 page and no cookie", async () => {
    const client = new ConsoleClient(rig.base);
    const answer = await client.login("not the token");
    expect(answer.status).toBe(401);
    expect(answer.headers.get("set-cookie")).toBeNull();
    expect(answer.text).toContain('id="login"');
    expectSecurityHeaders(answer.headers);
  });

  test("the login page has the form the contract names", async () => {
    const page = await new ConsoleClient(rig.base).get("/console/login");
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<form id="login"[^>]*method="post" action="\/console\/login"/);
    expect(page.text).toMatch(/<input type="password" name="token"/);
    expect(page.text).toContain('name="operator"');
  });

  test("a sign-in posted from another origin is refused", async () => {
    const client = new ConsoleClient(rig.base);
    const answer = await client.request("POST", "/console/login", {
      body: new URLSearchParams({ token: TOKEN }),
      headers: { origin: "http://evil.example" },
      cookie: null,
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get("set-cookie")).toBeNull();
  });

  test("logout ends the session and clears the cookie", async () => {
    const client = new ConsoleClient(rig.base);
    await client.login();
    const out = await client.post("/console/logout");
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("/console/login");
    expect(out.headers.get("set-cookie")).toMatch(/^tether_console=; .*Max-Age=0/);
    const after = await client.get("/console/");
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toBe("/console/login");
  });
});

describe("without a valid cookie", () => {
  test.each([
    "/console/",
    "/console/ext/echo",
    "/console/audit",
    "/console/audit/call/1",
    "/console/sessions",
    "/console/nowhere",
  ])("GET %s → 303 to the login page", async (path) => {
    for (const cookie of [null, "tether_console=not-a-session"]) {
      const answer = await new ConsoleClient(rig.base).request("GET", path, { cookie });
      expect(answer.status).toBe(303);
      expect(answer.headers.get("location")).toBe("/console/login");
      expectSecurityHeaders(answer.headers);
    }
  });

  test.each(ROUTES.map(([path, fields]) => [path, fields] as const))(
    "POST %s → 401, nothing changes",
    async (path, fields) => {
      const before = registryRows(rig.broker);
      const client = new ConsoleClient(rig.base);
      client.csrf = "anything";
      const answer = await client.post(path, fields);
      expect(answer.status).toBe(401);
      expectSecurityHeaders(answer.headers);
      expect(registryRows(rig.broker)).toBe(before);
      expect((await rpc("session.status", { session: "probe" }))["result"]).toBeDefined();
    },
  );
});

describe("CSRF: every state-changing route refuses a request that is not the console's own", () => {
  let client: ConsoleClient;
  beforeAll(async () => {
    client = new ConsoleClient(rig.base);
    await client.login();
  });

  const PROBES: ReadonlyArray<
    readonly [
      string,
      (fields: Record<string, string | string[]>) => [Record<string, string | string[]>, Record<string, string>],
    ]
  > = [
    ["no csrf field", (fields) => [{ ...fields, csrf: [] }, {}]],
    ["a wrong csrf token", (fields) => [{ ...fields, csrf: "x".repeat(43) }, {}]],
    ["Origin: http://evil.example", (fields) => [fields, { origin: "http://evil.example" }]],
    ["Sec-Fetch-Site: cross-site", (fields) => [fields, { "sec-fetch-site": "cross-site" }]],
  ];
  const cases = ROUTES.flatMap(([path, fields]) =>
    PROBES.map(([probe, make]) => [path, probe, ...make(fields)] as const),
  );

  test.each(cases)("POST %s with %s → 403, nothing changes", async (path, _probe, fields, headers) => {
    const before = registryRows(rig.broker);
    const answer = await client.post(path, fields, headers);
    expect(answer.status).toBe(403);
    expectSecurityHeaders(answer.headers);
    expect(registryRows(rig.broker)).toBe(before);
    // The live session is still open, and the console session still signed in.
    expect((await rpc("session.status", { session: "probe" }))["result"]).toBeDefined();
    expect((await client.get("/console/")).status).toBe(200);
  });

  test("the same forms with the console's own token and origin do what they say (the probes were refused for the probe, not the form)", async () => {
    const confirm = await client.post("/console/ext/echo/revoke");
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('id="confirm"');
  });
});

describe("the headers on every kind of response", () => {
  let client: ConsoleClient;
  beforeAll(async () => {
    client = new ConsoleClient(rig.base);
    await client.login();
  });

  test("a page, the stylesheet, a 404 and a 405", async () => {
    const page = await client.get("/console/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expectSecurityHeaders(page.headers);
    const sheet = /<link rel="stylesheet" href="(\/console\/assets\/console-[0-9a-f]{16}\.css)"/.exec(page.text)?.[1];
    expect(sheet).toBeDefined();
    const asset = await client.get(sheet!);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expectSecurityHeaders(asset.headers);
    for (const path of [
      "/console/assets/console-0000000000000000.css",
      "/console/nowhere",
      "/console/ext/nothing-installed",
      "/console/audit/call/999999",
    ]) {
      const missing = await client.get(path);
      expect([path, missing.status]).toEqual([path, 404]);
      expectSecurityHeaders(missing.headers);
    }
    const put = await client.request("PUT", "/console/");
    expect(put.status).toBe(405);
    expectSecurityHeaders(put.headers);
  });

  test("no inline script or style on any page, nothing from another origin", async () => {
    for (const path of [
      "/console/",
      "/console/ext/echo",
      "/console/ext/weather",
      "/console/audit",
      "/console/sessions",
      "/console/login",
    ]) {
      const { text } = await client.get(path);
      expect([path, /<script|<style|\sstyle=|\son[a-z]+=/i.test(text)]).toEqual([path, false]);
      expect([path, /(?:src|href)="(?:https?:)?\/\//i.test(text)]).toEqual([path, false]);
    }
  });

  test("a form past 64 KiB is 413, nothing changes", async () => {
    const before = registryRows(rig.broker);
    const answer = await client.post("/console/ext/echo/revoke", { confirm: "yes", padding: "p".repeat(70 * 1024) });
    expect(answer.status).toBe(413);
    expectSecurityHeaders(answer.headers);
    expect(registryRows(rig.broker)).toBe(before);
  });

  test("a Host that is not a loopback name (DNS rebinding) is refused, with the headers", async () => {
    const port = new URL(rig.base).port;
    const answer = await new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest(
        { host: "127.0.0.1", port, path: "/console/login", headers: { host: `evil.example:${port}` } },
        (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(answer.status).toBe(403);
    expect(answer.headers["content-security-policy"]).toContain("default-src 'none'");
  });
});
