/**
 * The console's sign-in and form logic on their own: console sessions (random
 * ids, idle expiry on the clock they are given, the bound on how many), the
 * cookie's attributes, the CSRF token check, the Origin / Sec-Fetch-Site and
 * Host checks, and form parsing (bounded bodies, duplicated fields, the
 * valibot schemas).
 */
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import {
  ConsoleSessions,
  SignInLimit,
  clearedCookie,
  cookieOf,
  cookiesOf,
  crossSiteProblem,
  csrfMatches,
  hostProblem,
  ownOrigin,
  sessionCookie,
} from "../../broker/console/auth.js";
import {
  ApproveForm,
  ActionForm,
  FormError,
  LoginForm,
  MAX_FORM_BYTES,
  parseFields,
  parseForm,
  readBody,
  readForm,
} from "../../broker/console/form.js";

/** A request as the checks read it: headers and whether it came over TCP or TLS. */
function request(
  headers: Record<string, string>,
  socket: { remoteAddress?: string; encrypted?: boolean } = { remoteAddress: "127.0.0.1" },
): IncomingMessage {
  return { headers, socket } as unknown as IncomingMessage;
}

function body(chunks: Buffer[], headers: Record<string, string> = {}): IncomingMessage {
  return Object.assign(Readable.from(chunks), { headers }) as unknown as IncomingMessage;
}

describe("console sessions", () => {
  test("ids and CSRF tokens are random, 32 bytes each; a session is found by its cookie", () => {
    const sessions = new ConsoleSessions();
    const a = sessions.create("alice");
    const b = sessions.create("bob");
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.id, b.id, a.csrf, b.csrf]).size).toBe(4);
    expect(sessions.find(request({ cookie: `other=1; tether_console=${a.id}` }))?.operator).toBe("alice");
    expect(sessions.find(request({ cookie: "tether_console=nope" }))).toBeNull();
    expect(sessions.find(request({}))).toBeNull();
  });

  test("a session idle past its limit is gone; each request restarts its clock", () => {
    let now = 1_000;
    const sessions = new ConsoleSessions({ idleMs: 100, now: () => now });
    const s = sessions.create("alice");
    const req = request({ cookie: `tether_console=${s.id}` });
    now += 100;
    expect(sessions.find(req)).toBe(s);
    now += 100;
    expect(sessions.find(req)).toBe(s);
    now += 101;
    expect(sessions.find(req)).toBeNull();
    now += 1;
    expect(sessions.find(req)).toBeNull();
  });

  test("a session in constant use still ends at its maximum age", () => {
    let now = 1_000;
    const sessions = new ConsoleSessions({ idleMs: 100, maxAgeMs: 1_000, now: () => now });
    const s = sessions.create("alice");
    const req = request({ cookie: `tether_console=${s.id}` });
    for (let i = 0; i < 10; i += 1) {
      now += 100;
      expect(sessions.find(req)).toBe(s);
    }
    now += 1;
    expect(sessions.find(req)).toBeNull();
  });

  test("past the bound, signing in ends the least recently used session", () => {
    let now = 0;
    const sessions = new ConsoleSessions({ max: 2, now: () => now++ });
    const a = sessions.create("a");
    const b = sessions.create("b");
    sessions.find(request({ cookie: `tether_console=${a.id}` }));
    sessions.create("c");
    expect(sessions.size).toBe(2);
    expect(sessions.find(request({ cookie: `tether_console=${b.id}` }))).toBeNull();
    expect(sessions.find(request({ cookie: `tether_console=${a.id}` }))).toBe(a);
  });

  test("logout ends it", () => {
    const sessions = new ConsoleSessions();
    const s = sessions.create("alice");
    sessions.end(s);
    expect(sessions.find(request({ cookie: `tether_console=${s.id}` }))).toBeNull();
  });

  test("the CSRF token must be the session's own, whole", () => {
    const sessions = new ConsoleSessions();
    const s = sessions.create("alice");
    const other = sessions.create("bob");
    expect(csrfMatches(s, s.csrf)).toBe(true);
    for (const given of [undefined, "", other.csrf, s.csrf.slice(1), `${s.csrf}x`, s.id])
      expect([given, csrfMatches(s, given)]).toEqual([given, false]);
  });
});

describe("cookies", () => {
  test("HttpOnly, SameSite=Strict, Path=/console; Secure only over TLS; clearing expires it", () => {
    const s = new ConsoleSessions().create("alice");
    expect(sessionCookie(s, false)).toBe(`tether_console=${s.id}; HttpOnly; SameSite=Strict; Path=/console`);
    expect(sessionCookie(s, true)).toBe(`tether_console=${s.id}; HttpOnly; SameSite=Strict; Path=/console; Secure`);
    expect(clearedCookie(false)).toBe("tether_console=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0");
  });

  test("one cookie's value out of a Cookie header", () => {
    expect(cookieOf("a=1; tether_console=xyz; b=2", "tether_console")).toBe("xyz");
    expect(cookieOf("tether_console_x=1", "tether_console")).toBeNull();
    expect(cookieOf(undefined, "tether_console")).toBeNull();
  });
});

describe("where a request comes from", () => {
  test("Origin must be the console's own and Sec-Fetch-Site same-origin, when the browser sends them", () => {
    const host = { host: "127.0.0.1:8080" };
    expect(crossSiteProblem(request({ ...host }))).toBeNull();
    expect(
      crossSiteProblem(request({ ...host, origin: "http://127.0.0.1:8080", "sec-fetch-site": "same-origin" })),
    ).toBeNull();
    expect(crossSiteProblem(request({ ...host, origin: "http://evil.example" }))).toContain("another origin");
    expect(crossSiteProblem(request({ ...host, origin: "http://127.0.0.1:8081" }))).toContain("another origin");
    expect(crossSiteProblem(request({ ...host, origin: "https://127.0.0.1:8080" }))).toContain("another origin");
    expect(crossSiteProblem(request({ ...host, origin: "null" }))).toContain("another origin");
    for (const site of ["cross-site", "same-site", "none"])
      expect(crossSiteProblem(request({ ...host, "sec-fetch-site": site }))).toContain(site);
    expect(ownOrigin(request(host, { remoteAddress: "127.0.0.1", encrypted: true }))).toBe("https://127.0.0.1:8080");
  });

  test("the Host must be a loopback name, over TCP and over the Unix socket (a forward passes the page's Host on)", () => {
    for (const host of ["127.0.0.1:1", "localhost:8080", "LOCALHOST", "[::1]:9"])
      expect([host, hostProblem(request({ host }))]).toEqual([host, null]);
    for (const host of ["evil.example:8080", "127.0.0.1.evil.example", "10.0.0.1:80", ""])
      expect(hostProblem(request({ host }))).toContain("not a loopback name");
    expect(hostProblem(request({}))).toContain("not a loopback name");
    expect(hostProblem(request({ host: "evil.example" }, {}))).toContain("not a loopback name");
    expect(hostProblem(request({ host: "localhost" }, {}))).toBeNull();
  });
});

describe("forms", () => {
  test("a body up to the bound is read; past it, 413 after reading the rest", async () => {
    expect((await readBody(body([Buffer.from("a=1")]))).toString()).toBe("a=1");
    const exact = Buffer.alloc(MAX_FORM_BYTES, 0x61);
    expect((await readBody(body([exact]))).length).toBe(MAX_FORM_BYTES);
    const over = [Buffer.alloc(MAX_FORM_BYTES, 0x61), Buffer.from("b")];
    await expect(readBody(body(over))).rejects.toMatchObject({ status: 413 });
    await expect(
      readBody(body([Buffer.from("x")], { "content-length": String(2 * 1024 * 1024) })),
    ).rejects.toMatchObject({ status: 413 });
  });

  test("only urlencoded forms", async () => {
    await expect(readForm(body([Buffer.from("{}")], { "content-type": "application/json" }))).rejects.toMatchObject({
      status: 415,
    });
    const fields = await readForm(
      body([Buffer.from("a=1&a=2&b=%20x")], { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }),
    );
    expect([...fields]).toEqual([
      ["a", ["1", "2"]],
      ["b", [" x"]],
    ]);
  });

  test("the schemas: a field twice where one is expected is refused; rules are a list; control characters are refused", () => {
    const fields = (text: string) => parseFields(Buffer.from(text));
    expect(parseForm(ActionForm, fields("csrf=abc&confirm=yes"))).toEqual({ csrf: "abc", confirm: "yes" });
    expect(parseForm(ActionForm, fields("csrf=abc"))).toEqual({ csrf: "abc" });
    expect(() => parseForm(ActionForm, fields("csrf=abc&confirm=sure"))).toThrow(FormError);
    expect(() => parseForm(ActionForm, fields("csrf=a&csrf=b"))).toThrow("the field 'csrf' was given 2 times");
    expect(parseForm(ApproveForm, fields("csrf=c&rule=GET+https%3A%2F%2Fa%2F&rule=POST+https%3A%2F%2Fb%2F"))).toEqual({
      csrf: "c",
      rule: ["GET https://a/", "POST https://b/"],
    });
    expect(parseForm(ApproveForm, fields("csrf=c"))).toEqual({ csrf: "c", rule: [] });
    expect(() => parseForm(ApproveForm, fields("csrf=c&rule=GET+https%3A%2F%2Fa%2F%1B[2J"))).toThrow(
      "no control characters",
    );
    expect(parseForm(LoginForm, fields("token=t&operator=+alice+"))).toEqual({ token: "t", operator: "alice" });
    expect(() => parseForm(LoginForm, fields("operator=alice"))).toThrow(FormError);
    expect(() => parseForm(LoginForm, fields(`token=t&operator=${"x".repeat(65)}`))).toThrow("at most 64 characters");
    expect(() => parseForm(LoginForm, fields("token=t&operator=al%07ice"))).toThrow("no control characters");
  });
});

describe("the bound on failed sign-ins", () => {
  test("past the failures in a window every sign-in waits until the oldest leaves it", () => {
    let now = 1_000_000;
    const limit = new SignInLimit({ failures: 3, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 3; i += 1) {
      expect(limit.blocked()).toBeNull();
      limit.failed();
      now += 1_000;
    }
    expect(limit.blocked()).toBe(57);
    now = 1_000_000 + 60_000;
    expect(limit.blocked()).toBeNull();
  });

  test("every cookie of the name is read, in order", () => {
    expect(cookiesOf("a=1; tether_console=x; b=2; tether_console=y", "tether_console")).toEqual(["x", "y"]);
    expect(cookieOf("tether_console=x; tether_console=y", "tether_console")).toBe("x");
    expect(cookiesOf(undefined, "tether_console")).toEqual([]);
  });
});
