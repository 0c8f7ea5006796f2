/**
 * Sign-ins through the real binary (`node bin/tether.js`) and over `tether
 * serve`, against the OAuth server of examples/servers/oauth-server.ts: the
 * operator's `tether login` (the test plays the browser, or the device's
 * approval), `tether logins`, `tether logout`, Ctrl-C; `login.start` /
 * `login.wait` / `login.status` / `login.logout` over the WebSocket. No token
 * in any output or log file.
 */
import Database from "better-sqlite3";
import { spawn, type ChildProcess } from "node:child_process";
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { WebSocket } from "ws";
import { startOAuthServer, type OAuthServer } from "../../examples/servers/oauth-server.js";
import { REPO } from "../support/satellites.js";

const BIN = join(REPO, "bin", "tether.js");
const SLOW = 120_000;

let server: OAuthServer;
let root: string;
let home: string;
/** Every byte any tether process printed. */
const printed: string[] = [];

async function tether(...args: string[]) {
  const r = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 60_000,
  });
  printed.push(r.stdout, r.stderr);
  return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

interface Running {
  readonly child: ChildProcess;
  /** Resolves with the first match of `pattern` in stdout (as soon as it is printed). */
  stdoutMatch(pattern: RegExp): Promise<RegExpExecArray>;
  readonly exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function start(...args: string[]): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO,
    env: { ...process.env, TETHER_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters: Array<() => void> = [];
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("close", (code) => {
      printed.push(out, err);
      for (const w of waiters.splice(0)) w();
      resolve({ code, stdout: out, stderr: err });
    }),
  );
  const stdoutMatch = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(out);
        if (m !== null) return resolve(m);
        if (child.exitCode !== null)
          return reject(
            new Error(`exited ${child.exitCode} before printing ${pattern}:\n${out}\n--- stderr ---\n${err}`),
          );
        waiters.push(check);
      };
      check();
    });
  return { child, stdoutMatch, exited };
}

beforeAll(async () => {
  server = await startOAuthServer();
  server.knobs.interval = 0;
  root = mkdtempSync(join(tmpdir(), "tether-cli-login-"));
  home = join(root, "home");
  const src = join(root, "src", "echo");
  mkdirSync(join(root, "src"), { recursive: true });
  cpSync(join(REPO, "manifests", "echo"), src, { recursive: true });
  appendFileSync(
    join(src, "manifest.toml"),
    `
[[login]]
name = "web"
description = "Sign in with a browser"
flow = "authorization_code"
client_id = "tether-test"
authorization_endpoint = "${server.url}/authorize"
token_endpoint = "${server.url}/token"
revocation_endpoint = "${server.url}/revoke"
scopes = ["repo:read"]
secret = "web_token"

[[login]]
name = "dev"
description = "Sign in on another device"
flow = "device"
client_id = "tether-test"
device_authorization_endpoint = "${server.url}/device/code"
token_endpoint = "${server.url}/token"
secret = "dev_token"

[[secret]]
name = "web_token"
description = "The browser sign-in's token"
rules = ["${server.url}/api/*"]
header = "Authorization"
format = "Bearer {}"

[[secret]]
name = "dev_token"
description = "The device sign-in's token"
rules = ["${server.url}/api/*"]
header = "Authorization"
format = "Bearer {}"

[net]
allow = ["${server.url}/api/*"]
`,
  );
  expect((await tether("install", src)).code).toBe(0);
  // The fake authorization server is on loopback: the operator lets sign-ins reach it, as net.fetch would need.
  writeFileSync(join(home, "policy.toml"), '[net]\nreach = ["loopback"]\n');
}, SLOW);
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

describe("tether login, logins, logout", () => {
  test(
    "an unapproved extension is refused, saying what to run",
    async () => {
      const r = await tether("login", "echo", "web");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^tether login: 'echo' is not approved as installed: .*Run tether review echo, then tether approve echo$/,
      );
      expect((await tether("approve", "echo", "--yes")).code).toBe(0);
    },
    SLOW,
  );

  test(
    "authorization code: the URL on stdout, the browser's redirect, signed in; the token file 0600",
    async () => {
      const login = start("login", "echo", "web", "--timeout", "60");
      const [, url] = await login.stdoutMatch(/^ {4}(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)$/m);
      const page = await fetch(url!);
      expect(await page.text()).toMatch(/Signed in/);
      const done = await login.exited;
      expect(done.code).toBe(0);
      expect(done.stdout).toMatch(/^To sign echo in \(web\), open this URL in a browser on this machine:$/m);
      expect(done.stdout).toMatch(
        /Waiting up to 60 s for the redirect to http:\/\/127\.0\.0\.1:\d+\/callback \(Ctrl-C cancels\)\./,
      );
      expect(done.stdout).toMatch(
        /^signed in: echo web: signed in as of \S+Z, expires in 3[56]\d\d s, refreshable: yes$/m,
      );
      expect(statSync(join(home, "logins", "echo.web.json")).mode & 0o777).toBe(0o600);
      expect(statSync(join(home, "logins")).mode & 0o777).toBe(0o700);
    },
    SLOW,
  );

  test(
    "device: the code and where to enter it, then signed in when the server approves",
    async () => {
      server.knobs.pendingPolls = 1;
      const r = await tether("login", "echo", "dev");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        `To sign echo in (dev), open ${server.url}/device and enter the code:\n\n    WDJB-MJHT\n`,
      );
      expect(r.stderr).toContain(`… waiting for the sign-in at ${server.url}/device (poll 1)`);
      expect(r.stdout).toMatch(/^signed in: echo dev: signed in as of/m);
    },
    SLOW,
  );

  test(
    "tether logins lists both, never a token; --json too",
    async () => {
      const r = await tether("logins");
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(
        /^echo\n {2}web: signed in as of \S+, expires in \d+ s, refreshable: yes\n {2}dev: signed in as of/,
      );
      const json = JSON.parse((await tether("logins", "echo", "--json")).stdout) as Array<{
        login: string;
        signed_in: boolean;
        refreshable: boolean;
      }>;
      expect(json.map((s) => [s.login, s.signed_in, s.refreshable])).toEqual([
        ["web", true, true],
        ["dev", true, true],
      ]);
    },
    SLOW,
  );

  test(
    "Ctrl-C cancels a sign-in waiting for its redirect: exit 1, the listener gone",
    async () => {
      const login = start("login", "echo", "web");
      const [, redirect] = await login.stdoutMatch(/redirect to (http:\/\/127\.0\.0\.1:\d+\/callback)/);
      login.child.kill("SIGINT");
      const done = await login.exited;
      expect(done.code).toBe(1);
      expect(done.stderr).toContain("tether login: cancelled; echo is not signed in");
      await expect(fetch(redirect!)).rejects.toThrow();
    },
    SLOW,
  );

  test(
    "tether logout revokes and deletes; logins says not signed in",
    async () => {
      const r = await tether("logout", "echo");
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(
        "echo web: signed out; the tokens are deleted\necho dev: signed out; the tokens are deleted",
      );
      expect(server.revoked.length).toBe(2);
      expect(readdirSync(join(home, "logins"))).toEqual([]);
      expect((await tether("logins", "echo")).stdout).toBe(
        "echo\n  web: not signed in (tether login echo web)\n  dev: not signed in (tether login echo dev)",
      );
    },
    SLOW,
  );
});

describe("over tether serve", () => {
  test(
    "login.start → the prompt; the browser; login.wait → signed in; login.status; login.logout; unknown ids refused",
    async () => {
      const serve = start("serve", "--port", "0");
      const [, url, tokenFile] = await serve.stdoutMatch(/^tether serve: listening on (\S+) \(token file: (.+)\)$/m);
      const ws = new WebSocket(url!, {
        headers: { authorization: `Bearer ${readFileSync(tokenFile!, "utf8").trim()}` },
      });
      await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
      const answers = new Map<number, (m: Record<string, unknown>) => void>();
      ws.on("message", (data) => {
        const m = JSON.parse(String(data)) as { id: number };
        printed.push(String(data));
        answers.get(m.id)?.(m);
      });
      let next = 0;
      const call = (method: string, params: unknown) =>
        new Promise<Record<string, unknown>>((resolve) => {
          const id = ++next;
          answers.set(id, resolve);
          ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
        });

      const started = (await call("login.start", { extension: "echo", login: "web" })).result as Record<
        string,
        unknown
      >;
      expect(started).toMatchObject({
        extension: "echo",
        login: "web",
        flow: "authorization_code",
        user_code: null,
        expires_in: 300,
      });
      expect(started["verification_uri"]).toBe(started["authorization_url"]);
      const waited = call("login.wait", { login_id: started["login_id"] });
      expect((await fetch(started["authorization_url"] as string)).status).toBe(200);
      const signedIn = (await waited).result as { signed_in: boolean; expires_in: number; refreshable: boolean };
      expect(signedIn).toEqual({ signed_in: true, expires_in: expect.any(Number), refreshable: true });
      expect(signedIn.expires_in).toBeGreaterThan(3500);

      const status = (await call("login.status", { extension: "echo" })).result as Array<Record<string, unknown>>;
      expect(status.map((s) => [s["login"], s["signed_in"]])).toEqual([
        ["web", true],
        ["dev", false],
      ]);
      const unknown = (await call("login.wait", { login_id: "nope" })).error as Record<string, unknown>;
      expect(unknown).toMatchObject({ code: -32005, data: { code: "unknown_login" } });
      const undeclared = (await call("login.start", { extension: "echo", login: "gitlab" })).error as Record<
        string,
        unknown
      >;
      expect(undeclared).toMatchObject({
        code: -32000,
        message: "'echo' has no login 'gitlab'; it declares: web, dev",
        data: { code: "login_failed" },
      });

      server.knobs.deviceOutcome = "deny";
      const device = (await call("login.start", { extension: "echo", login: "dev" })).result as Record<string, unknown>;
      expect(device).toMatchObject({ flow: "device", user_code: "WDJB-MJHT", authorization_url: null });
      const denied = (await call("login.wait", { login_id: device["login_id"] })).error as Record<string, unknown>;
      expect(denied).toMatchObject({ code: -32000, data: { code: "login_failed" } });
      expect(denied["message"]).toMatch(/declined at .* \(access_denied\)/);

      const out = (await call("login.logout", { extension: "echo", login: "web" })).result;
      expect(out).toEqual([{ extension: "echo", login: "web", deleted: true, notes: [] }]);
      ws.close();
      serve.child.kill("SIGTERM");
      expect((await serve.exited).code).toBe(0);
    },
    SLOW,
  );
});

describe("sign-in requests are judged by the operator's policy and audited", () => {
  test(
    "with 127.0.0.0/8 denied, the device endpoint is never asked; each request is a login.request audit row",
    async () => {
      const policy = join(home, "policy.toml");
      const before = readFileSync(policy, "utf8");
      const asked = server.requests.length;
      writeFileSync(policy, '[net]\nreach = ["loopback"]\ndeny = ["http://[127.0.0.0/8]"]\n');
      try {
        const r = await tether("login", "echo", "dev");
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain(
          "was not asked: refused by the operator's policy (operator:deny http://[127.0.0.0/8]): the operator's policy denies address 127.0.0.1",
        );
        expect(server.requests.slice(asked)).toEqual([]);
      } finally {
        writeFileSync(policy, before);
      }
      const db = new Database(join(home, "tether.db"), { readonly: true });
      try {
        const rows = db
          .prepare(
            "select extension, capability, decision, rule, target from cap_audit where capability = 'login.request' order by id",
          )
          .all() as Array<Record<string, string>>;
        expect(rows).toContainEqual({
          extension: "echo",
          capability: "login.request",
          decision: "denied",
          rule: "operator:deny http://[127.0.0.0/8]",
          target: `${server.url}/device/code`,
        });
        expect(rows.filter((r) => r.decision === "allowed").length).toBeGreaterThan(0);
      } finally {
        db.close();
      }
    },
    SLOW,
  );
});

test(
  "doctor never asks to tether secret set a secret a sign-in fills",
  async () => {
    const r = await tether("doctor", "--json");
    const secrets = (JSON.parse(r.stdout) as Array<{ name: string; detail: string }>).find((c) => c.name === "secrets");
    expect(secrets?.detail).toBe("no secret to set by hand; 2 filled by signing in (tether logins says which are)");
  },
  SLOW,
);

describe("last", () => {
  test("no token, code or device code in any output, answer or log file", () => {
    const logs = readdirSync(join(home, "logs")).map((f) => readFileSync(join(home, "logs", f), "utf8"));
    const text = [...printed, ...logs].join("\n");
    expect(server.issued.length).toBeGreaterThan(5);
    expect(server.issued.filter((value) => text.includes(value))).toEqual([]);
  });
});
