/**
 * Sign-ins run by the broker, against a real OAuth server on loopback
 * (examples/servers/oauth-server.ts): the authorization-code flow with PKCE (the
 * test plays the browser), the device flow, refresh, the token endpoint's
 * failures, logout, the token file's mode — and no token value in any message,
 * log line or progress line.
 */
import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../broker/base/log.js";
import { parseManifest } from "../../broker/install/manifest.js";
import { Logins, type InstalledLogins } from "../../broker/login/logins.js";
import { challengeOf } from "../../broker/login/pkce.js";
import { Refresher } from "../../broker/login/refresher.js";
import { statusLine } from "../../broker/login/status.js";
import { FakeClock } from "../support/fake-clock.js";
import { startOAuthServer, type OAuthServer } from "../../examples/servers/oauth-server.js";

let server: OAuthServer;
let root: string;
/** Everything the broker said: log lines, progress lines, error messages, prompts, statuses. */
const said: string[] = [];
const log = createLogger({
  level: "debug",
  sink: (level, msg, fields) => void said.push(`${level} ${msg} ${JSON.stringify(fields)}`),
});

function manifest(name: string, flow: "device" | "authorization_code") {
  const url = server.url;
  const endpoint =
    flow === "device"
      ? `device_authorization_endpoint = "${url}/device/code"`
      : `authorization_endpoint = "${url}/authorize"`;
  return parseManifest(
    `name = "${name}"\nversion = "1.0.0"\ndescription = "test"\nentry = "index.ts"\n\n[[login]]\nname = "github"\ndescription = "Sign in to the test server"\nflow = "${flow}"\nclient_id = "Iv1.abc"\n${endpoint}\ntoken_endpoint = "${url}/token"\nrevocation_endpoint = "${url}/revoke"\nscopes = ["repo:read"]\nsecret = "github_token"\n\n[[secret]]\nname = "github_token"\ndescription = "The signed-in token"\nrules = ["${url}/api/*"]\nheader = "Authorization"\nformat = "Bearer {}"\n\n[net]\nallow = ["${url}/api/*"]\n`,
    `${name}/manifest.toml`,
  );
}

interface Setup {
  readonly logins: Logins;
  readonly clock: FakeClock;
  readonly home: string;
}

let homes = 0;
/** `flow`: the code flow's clock holds its sleeps (the redirect's timeout), the device flow's pass at once (polling). */
function setup(flow: "code" | "device", options: { fetch?: typeof fetch } = {}): Setup {
  const home = join(root, `home-${++homes}`);
  const clock = new FakeClock();
  clock.instant = flow === "device";
  const installed: InstalledLogins[] = [
    { name: "code-ext", manifest: manifest("code-ext", "authorization_code"), approved: true },
    { name: "device-ext", manifest: manifest("device-ext", "device"), approved: true },
    { name: "pending-ext", manifest: manifest("pending-ext", "device"), approved: false },
  ];
  const logins = new Logins({
    home,
    log,
    clock,
    extensions: () => installed,
    extension: (n) => installed.find((e) => e.name === n) ?? null,
    ...options,
  });
  return { logins, clock, home };
}

const progress = (line: string) => void said.push(`progress ${line}`);

/** A failure's message, kept for the final search. */
async function failureOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    said.push(`error ${(err as Error).message}`);
    return (err as Error).message;
  }
  throw new Error("expected a failure");
}

/** Signs code-ext in, playing the browser: the authorize URL redirects to the loopback listener. */
async function signInByCode(s: Setup): Promise<{ page: Response }> {
  const started = await s.logins.start("code-ext", "github", { progress });
  said.push(`prompt ${JSON.stringify(started.prompt)}`);
  const page = await fetch(started.prompt.authorizationUrl!);
  await started.done;
  return { page };
}

async function signInByDevice(s: Setup) {
  const started = await s.logins.start("device-ext", undefined, { progress });
  said.push(`prompt ${JSON.stringify(started.prompt)}`);
  return { started, tokens: await started.done };
}

beforeAll(async () => {
  server = await startOAuthServer();
  root = mkdtempSync(join(tmpdir(), "tether-login-"));
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});
beforeEach(() => {
  server.knobs = {
    expiresIn: 3600,
    refresh: true,
    pendingPolls: 0,
    deviceOutcome: "approve",
    deviceExpiresIn: 600,
    interval: 5,
    wrongState: null,
    authorizeError: null,
  };
  server.requests.length = 0;
  server.failNext(null);
});

describe("authorization code with PKCE", () => {
  test("end to end: the browser is redirected to the loopback listener, the code is exchanged with the verifier, the token stored 0600 in a 0700 folder", async () => {
    const s = setup("code");
    const { page } = await signInByCode(s);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/Signed in/);

    const authorize = server.requests.find((r) => r.path === "/authorize")!.params;
    expect(authorize).toMatchObject({
      response_type: "code",
      client_id: "Iv1.abc",
      scope: "repo:read",
      code_challenge_method: "S256",
    });
    expect(authorize["redirect_uri"]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(authorize["state"]!.length).toBeGreaterThanOrEqual(32);
    const exchange = server.requests.find((r) => r.path === "/token")!.params;
    expect(exchange["grant_type"]).toBe("authorization_code");
    expect(createHash("sha256").update(exchange["code_verifier"]!).digest("base64url")).toBe(
      authorize["code_challenge"],
    );

    const file = s.logins.store.file("code-ext", "github");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(s.logins.store.dir).mode & 0o777).toBe(0o700);
    const lastAccess = server.issued.filter((v) => v.startsWith("at-")).at(-1)!;
    expect(await s.logins.tokens.currentToken("code-ext", "github_token")).toBe(lastAccess);
    expect(await s.logins.tokens.currentToken("code-ext", "other_secret")).toBeNull();
    const [status] = s.logins.status("code-ext");
    expect(status).toMatchObject({ signed_in: true, expires_in: 3600, refreshable: true, problem: null });
    expect(statusLine(status!)).toMatch(
      /^github: signed in as of \d{4}-\d\d-\d\dT.*Z, expires in 3600 s, refreshable: yes$/,
    );
  });

  test("the S256 challenge is RFC 7636's (appendix B)", () => {
    expect(challengeOf("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe(
      "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    );
  });

  test("a redirect with the wrong state is answered and ignored: nothing is exchanged, and the sign-in goes on to complete with its own", async () => {
    const s = setup("code");
    server.knobs.wrongState = "forged-state";
    const started = await s.logins.start("code-ext", "github");
    // A stray request (another process on the machine) with a forged state, then with none.
    const page = await fetch(started.prompt.authorizationUrl!);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("goes on waiting for its own");
    const bare = new URL(started.prompt.redirectUri!);
    expect((await fetch(`${bare.origin}/callback?code=stolen`)).status).toBe(400);
    expect(server.requests.filter((r) => r.path === "/token")).toEqual([]);
    expect(s.logins.store.read("code-ext", "github")).toBeNull();
    // The operator's own redirect still completes it.
    server.knobs.wrongState = null;
    const own = await fetch(started.prompt.authorizationUrl!);
    expect(own.status).toBe(200);
    await started.done;
    expect(server.requests.filter((r) => r.path === "/token")).toHaveLength(1);
    expect(s.logins.store.read("code-ext", "github")).not.toBeNull();
  });

  test("an error redirect (declined in the browser) ends the sign-in with its code", async () => {
    const s = setup("code");
    server.knobs.authorizeError = "access_denied";
    const started = await s.logins.start("code-ext", "github");
    expect((await fetch(started.prompt.authorizationUrl!)).status).toBe(400);
    expect(await failureOf(started.done)).toMatch(
      /redirected with error access_denied \(the sign-in was declined in the browser\)/,
    );
  });

  test("a replayed code is refused by the token endpoint, and its error is surfaced cleanly", async () => {
    const s = setup("code");
    // The first sign-in: the test follows the redirect by hand, and keeps the code.
    const first = await s.logins.start("code-ext", "github");
    const firstRedirect = (await fetch(first.prompt.authorizationUrl!, { redirect: "manual" })).headers.get(
      "location",
    )!;
    const usedCode = new URL(firstRedirect).searchParams.get("code")!;
    expect((await fetch(firstRedirect)).status).toBe(200);
    await first.done;
    // The second: its own redirect, but carrying the used code.
    const second = await s.logins.start("code-ext", "github");
    const redirect = new URL(
      (await fetch(second.prompt.authorizationUrl!, { redirect: "manual" })).headers.get("location")!,
    );
    redirect.searchParams.set("code", usedCode);
    expect((await fetch(redirect)).status).toBe(502);
    const message = await failureOf(second.done);
    expect(message).toMatch(
      /^the token endpoint http:\/\/127\.0\.0\.1:\d+\/token answered HTTP 400 invalid_grant: Authorization code already used$/,
    );
    expect(message).not.toContain(usedCode);
  });

  test("a verifier that does not match the challenge is refused by the server (PKCE)", async () => {
    const tamper: typeof fetch = (input, init) => {
      const body = new URLSearchParams(String(init?.body ?? ""));
      if (body.has("code_verifier")) body.set("code_verifier", "a-verifier-the-attacker-guessed-0123456789abc");
      return fetch(input, { ...init, body: body.toString() });
    };
    const s = setup("code", { fetch: tamper });
    const started = await s.logins.start("code-ext", "github");
    expect((await fetch(started.prompt.authorizationUrl!)).status).toBe(502);
    expect(await failureOf(started.done)).toMatch(/answered HTTP 400 invalid_grant: PKCE verification failed$/);
  });

  test("no redirect within the timeout: the sign-in fails and the listener is closed", async () => {
    const s = setup("code");
    const started = await s.logins.start("code-ext", "github", { timeoutMs: 120_000 });
    expect(s.clock.held).toBe(1);
    s.clock.release();
    expect(await failureOf(started.done)).toMatch(
      /no redirect reached http:\/\/127\.0\.0\.1:\d+\/callback within 120 s; run tether login again \(--timeout gives more time\)/,
    );
    await expect(fetch(started.prompt.redirectUri!)).rejects.toThrow();
  });

  test("cancelling (Ctrl-C) ends the wait and closes the listener", async () => {
    const s = setup("code");
    const controller = new AbortController();
    const started = await s.logins.start("code-ext", "github", { signal: controller.signal });
    controller.abort(new Error("cancelled by the operator"));
    expect(await failureOf(started.done)).toBe("cancelled by the operator");
    await expect(fetch(started.prompt.redirectUri!)).rejects.toThrow();
  });
});

describe("the token endpoint failing", () => {
  test.each([
    ["500", /answered HTTP 500 with no OAuth error code; try again later/],
    ["invalid_grant", /answered HTTP 400 invalid_grant: The grant is invalid$/],
    ["not_json", /answered HTTP 502 with a body that is not a JSON object \(\d+ bytes, not shown\)/],
    ["oversized", /answered HTTP 200 with more than 64 KiB; that is no OAuth answer/],
    [
      "echo_code",
      /answered HTTP 400 invalid_grant \(its description is withheld: it repeats a value of this sign-in\)/,
    ],
  ] as const)("%s: a clear failure naming the endpoint, never the body", async (how, expected) => {
    const s = setup("code");
    server.failNext(how);
    const started = await s.logins.start("code-ext", "github");
    const redirect = (await fetch(started.prompt.authorizationUrl!, { redirect: "manual" })).headers.get("location")!;
    const code = new URL(redirect).searchParams.get("code")!;
    expect((await fetch(redirect)).status).toBe(502);
    const message = await failureOf(started.done);
    expect(message).toMatch(new RegExp(`^the token endpoint ${server.url.replaceAll(".", "\\.")}/token `));
    expect(message).toMatch(expected);
    expect(message).not.toContain(code);
    expect(message).not.toContain("<html>");
    expect(s.logins.store.read("code-ext", "github")).toBeNull();
  });
});

describe("the device flow", () => {
  test("authorization_pending, then approval: polls every interval, prompt shows the code and the URL", async () => {
    const s = setup("device");
    server.knobs.pendingPolls = 2;
    const { started, tokens } = await signInByDevice(s);
    expect(started.prompt).toMatchObject({
      flow: "device",
      userCode: "WDJB-MJHT",
      verificationUri: `${server.url}/device`,
      expiresIn: 600,
    });
    expect(s.clock.slept).toEqual([5000, 5000, 5000]);
    expect(server.requests.filter((r) => r.path === "/token").map((r) => r.params["grant_type"])).toEqual(
      Array(3).fill("urn:ietf:params:oauth:grant-type:device_code"),
    );
    expect(tokens.refresh_token).not.toBeNull();
    expect(said.filter((l) => l.startsWith("progress waiting for the sign-in")).length).toBeGreaterThanOrEqual(2);
    expect(s.logins.store.read("device-ext", "github")?.access_token).toBe(tokens.access_token);
  });

  test("slow_down adds 5 s to the interval", async () => {
    const s = setup("device");
    server.knobs.deviceOutcome = "slow_down_once";
    await signInByDevice(s);
    expect(s.clock.slept).toEqual([5000, 10000]);
  });

  test("expired_token ends it", async () => {
    const s = setup("device");
    server.knobs.deviceOutcome = "expire";
    const started = await s.logins.start("device-ext");
    expect(await failureOf(started.done)).toMatch(
      /^the user code expired \(.*expired_token\); run tether login again$/,
    );
  });

  test("the code's own lifetime ends it too, without a poll past it", async () => {
    const s = setup("device");
    server.knobs.pendingPolls = 1000;
    server.knobs.deviceExpiresIn = 12;
    const started = await s.logins.start("device-ext");
    expect(await failureOf(started.done)).toMatch(/the user code expired after 12 s without a sign-in/);
    expect(server.requests.filter((r) => r.path === "/token").length).toBe(2);
  });

  test("access_denied ends it", async () => {
    const s = setup("device");
    server.knobs.deviceOutcome = "deny";
    const started = await s.logins.start("device-ext");
    expect(await failureOf(started.done)).toMatch(
      /the sign-in was declined at http:\/\/127\.0\.0\.1:\d+\/device \(access_denied\)/,
    );
    expect(s.logins.store.read("device-ext", "github")).toBeNull();
  });
});

describe("refresh", () => {
  test("near expiry the token is refreshed once (however many ask), the file replaced; past expiry an old token is never answered", async () => {
    const s = setup("device");
    const { tokens } = await signInByDevice(s);
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBe(tokens.access_token);
    expect(server.requests.filter((r) => r.params["grant_type"] === "refresh_token")).toEqual([]);

    // 6 minutes left of an hour: inside the last tenth.
    s.clock.advance(3_240_000);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => s.logins.tokens.currentToken("device-ext", "github_token")),
    );
    const refreshes = server.requests.filter((r) => r.params["grant_type"] === "refresh_token");
    expect(refreshes.length).toBe(1);
    expect(refreshes[0]!.params["refresh_token"]).toBe(tokens.refresh_token);
    const renewed = s.logins.store.read("device-ext", "github")!;
    expect(new Set(answers)).toEqual(new Set([renewed.access_token]));
    expect(renewed.access_token).not.toBe(tokens.access_token);
    expect(renewed.obtained_at).toBe(s.clock.now());
    expect(renewed.signed_in_at).toBe(tokens.signed_in_at);
    expect(statSync(s.logins.store.file("device-ext", "github")).mode & 0o777).toBe(0o600);

    // Past its expiry, with the server failing: null, never the expired token.
    s.clock.advance(3_600_000);
    server.failNext("500");
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBeNull();
    expect(
      said.some(
        (l) => l.includes("login device-ext/github: refreshing failed: the token endpoint") && l.includes("HTTP 500"),
      ),
    ).toBe(true);
  });

  test("a refresh token the server refuses (invalid_grant): null once expired, and the log says to sign in again", async () => {
    const s = setup("device");
    await signInByDevice(s);
    s.clock.advance(3_700_000);
    server.failNext("invalid_grant");
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBeNull();
    expect(said.some((l) => l.includes("sign in again: tether login device-ext github"))).toBe(true);
  });

  test("without a refresh token: answered until expiry, then null; status says refreshable: no", async () => {
    const s = setup("device");
    server.knobs.refresh = false;
    const { tokens } = await signInByDevice(s);
    s.clock.advance(3_590_000);
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBe(tokens.access_token);
    s.clock.advance(10_000);
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBeNull();
    expect(statusLine(s.logins.status("device-ext")[0]!)).toMatch(
      /signed out \(expired; tether login device-ext github\) as of .*, expired, refreshable: no$/,
    );
  });

  test("the daemon's refresher renews what is due and says when the next falls due", async () => {
    const s = setup("device");
    const { tokens } = await signInByDevice(s);
    const refresher = new Refresher(s.logins, log);
    expect(await refresher.runOnce()).toBe(tokens.expires_at! - 360_000);
    s.clock.advance(3_300_000);
    const next = await refresher.runOnce();
    const renewed = s.logins.store.read("device-ext", "github")!;
    expect(renewed.access_token).not.toBe(tokens.access_token);
    expect(next).toBe(renewed.expires_at! - 360_000);
  });

  test("an unapproved extension gets no token and cannot sign in", async () => {
    const s = setup("device");
    expect(await failureOf(s.logins.start("pending-ext"))).toMatch(
      /'pending-ext' is not approved as installed.*tether approve pending-ext/,
    );
    expect(await s.logins.tokens.currentToken("pending-ext", "github_token")).toBeNull();
  });
});

describe("storage and logout", () => {
  test("a token file group or other may read is refused, saying the chmod; so is a loose folder", async () => {
    const s = setup("device");
    await signInByDevice(s);
    const file = s.logins.store.file("device-ext", "github");
    chmodSync(file, 0o644);
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBeNull();
    expect(s.logins.status("device-ext")[0]!.problem).toBe(
      `${file} has mode 644: group or other may read or write it. Run: chmod 600 ${file} (or tether logout device-ext github)`,
    );
    chmodSync(file, 0o600);
    chmodSync(s.logins.store.dir, 0o755);
    expect(s.logins.status("device-ext")[0]!.problem).toMatch(/has mode 755: .* Run: chmod 700 /);
    chmodSync(s.logins.store.dir, 0o700);
    expect(s.logins.status("device-ext")[0]!.signed_in).toBe(true);
  });

  test("logout revokes at the server (refresh token first) and deletes the stored tokens", async () => {
    const s = setup("device");
    const { tokens } = await signInByDevice(s);
    const reports = await s.logins.logout("device-ext");
    expect(reports).toEqual([{ extension: "device-ext", login: "github", deleted: true, notes: [] }]);
    expect(server.revoked.slice(-2)).toEqual([tokens.refresh_token, tokens.access_token]);
    expect(s.logins.store.read("device-ext", "github")).toBeNull();
    expect(await s.logins.tokens.currentToken("device-ext", "github_token")).toBeNull();
    expect(s.logins.status("device-ext")[0]).toMatchObject({ signed_in: false, signed_in_at: null });
    expect(await s.logins.logout("device-ext", "github")).toEqual([
      { extension: "device-ext", login: "github", deleted: false, notes: [] },
    ]);
    expect(await failureOf(s.logins.logout("device-ext", "nope"))).toMatch(/has no login 'nope'.*it declares: github/);
  });

  test("asking for a login that is not declared says which are", async () => {
    const s = setup("device");
    expect(await failureOf(s.logins.start("code-ext", "gitlab"))).toBe(
      "'code-ext' has no login 'gitlab'; it declares: github",
    );
    expect(await failureOf(s.logins.start("nowhere"))).toMatch(/no extension 'nowhere' is installed/);
  });
});

describe("last", () => {
  test("no token, code or device code in any message, log line, progress line, prompt or status of the tests above", () => {
    const text = said.join("\n");
    expect(said.length).toBeGreaterThan(20);
    expect(server.issued.length).toBeGreaterThan(20);
    expect(server.issued.filter((value) => text.includes(value))).toEqual([]);
  });
});
