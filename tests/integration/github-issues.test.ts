/**
 * manifests/github-issues end to end, over a real jailed satellite, the OAuth
 * server and the GitHub-style API of examples/servers/ on ephemeral ports:
 *
 * - before a sign-in, `whoami` is refused, naming `tether login github-issues`;
 * - the device flow through the library (`loginsOf(broker).start`): the
 *   server approves the pending device code, the tokens are stored;
 * - `whoami` through a session: the API saw `Bearer <token>`, the extension's
 *   answer has the login and `[secret]` where the API echoed the header
 *   (`Bearer <token>` is redacted whole);
 * - the leak check: no token the server issued (nor its base64, nor its
 *   `Bearer` form) is in any file of the home but `logins/`, in any frame the
 *   broker sent to the satellite, or in any line the broker logged;
 * - after `logout` the call is refused again.
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { blockText, type InvocationOutcome } from "../../broker/base/outcome.js";
import { loginsOf } from "../../broker/login/logins.js";
import { SatelliteConnection } from "../../broker/satellite/connection.js";
import { Session } from "../../broker/sessions/session.js";
import { encodeFrame } from "../../jail-runtime/wire/codec.js";
import { API_LOGIN, startGithubApi, type GithubApi } from "../../examples/servers/github-api.js";
import { startOAuthServer, type OAuthServer } from "../../examples/servers/oauth-server.js";
import { envOptions } from "../support/env-options.js";
import { FakeClock } from "../support/fake-clock.js";
import { REPO } from "../support/satellites.js";

const EXT = "github-issues";
const SLOW = 90_000;

let tmp: string;
let home: string;
let oauth: OAuthServer;
let api: GithubApi;
let broker: Broker;
let session: Session;
/** Every frame the broker sent to a satellite, encoded as on the wire. */
const frames: Buffer[] = [];
/** Every line the broker logged (any level). */
const logged: string[] = [];
const originalSend = SatelliteConnection.prototype.send;

/** manifests/github-issues copied to `tmp`, its fixed loopback URLs pointed at this test's servers. */
function copyExample(): string {
  const dir = join(tmp, EXT);
  cpSync(join(REPO, "manifests", EXT), dir, { recursive: true });
  for (const file of ["manifest.toml", "index.ts"]) {
    const path = join(dir, file);
    writeFileSync(
      path,
      readFileSync(path, "utf8")
        .replaceAll("http://127.0.0.1:17312", oauth.url)
        .replaceAll("http://127.0.0.1:17313", api.url),
    );
  }
  return dir;
}

async function whoami(): Promise<InvocationOutcome<"tool">> {
  return (await session.callTool("whoami", "{}")).outcome;
}

const textOf = (outcome: InvocationOutcome<"tool">) =>
  outcome.ok ? outcome.value.content.map(blockText).join(" | ") : `${outcome.error.code}: ${outcome.error.msg}`;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-github-issues-"));
  home = join(tmp, "home");
  oauth = await startOAuthServer();
  api = await startGithubApi(oauth);
  SatelliteConnection.prototype.send = function (this: SatelliteConnection, frame) {
    frames.push(Buffer.from(encodeFrame(frame)));
    return originalSend.call(this, frame);
  };
  const log = createLogger({
    level: "debug",
    sink: (level, msg, fields) => logged.push(`${level} ${msg} ${JSON.stringify(fields)}`),
  });
  broker = Broker.open({ ...envOptions(), home, log });
  // Before anything asks for the broker's sign-ins: the device flow's polling sleeps pass at once.
  loginsOf(broker, { clock: new FakeClock() });
  writeFileSync(join(home, "policy.toml"), "[net]\nallow_private = true\n");
  await broker.registry.install(copyExample());
  broker.registry.approve(EXT);
  const workspace = join(tmp, "workspace");
  mkdirSync(workspace);
  session = await Session.open(broker, { id: "gh", workspace });
}, 60_000);

afterAll(async () => {
  SatelliteConnection.prototype.send = originalSend;
  await session?.close();
  await broker?.destroy();
  await api?.close();
  await oauth?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Every file under `dir` but the sign-ins' folder, with its bytes. */
function filesUnder(dir: string): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join(home, "logins")) out.push(...filesUnder(path));
    } else if (entry.isFile()) out.push([path, readFileSync(path)]);
  }
  return out;
}

test(
  "signed out, the call is refused naming tether login; signed in by the device flow, the API sees the token and the extension sees [secret]; logged out, refused again; no token leaks",
  async () => {
    // Before any sign-in: the broker refuses the request, the API is never asked.
    const before = await whoami();
    expect(before).toMatchObject({ ok: false, error: { code: "denied" } });
    expect(textOf(before)).toContain("tether login github-issues");
    expect(api.hits).toEqual([]);

    // The device flow through the library: the server approves the pending device code on its first poll.
    const logins = loginsOf(broker);
    const started = await logins.start(EXT);
    expect(started.prompt).toMatchObject({
      flow: "device",
      userCode: "WDJB-MJHT",
      verificationUri: `${oauth.url}/device`,
    });
    await started.done;
    expect(oauth.requests.map((r) => r.path)).toEqual(["/device/code", "/token"]);
    const access = oauth.issued.filter((v) => v.startsWith("at-"));
    const refresh = oauth.issued.filter((v) => v.startsWith("rt-"));
    expect([access.length, refresh.length]).toEqual([1, 1]);
    expect(logins.status(EXT)).toMatchObject([{ signed_in: true, refreshable: true }]);

    // The injected call: the API saw the token, the extension only [secret] (the whole "Bearer …" form is replaced).
    const signedIn = await whoami();
    expect(textOf(signedIn)).toContain(`signed in as ${API_LOGIN} (the API echoed Authorization: [secret])`);
    expect(api.hits).toEqual([{ path: "/user", authorization: `Bearer ${access[0]}` }]);
    const issues = await session.callTool("list_issues", '{"repo":"acme/app"}');
    expect(textOf(issues.outcome)).toMatch(/^#7 Crash on start/);
    expect(api.hits.at(-1)).toEqual({ path: "/repos/acme/app/issues", authorization: `Bearer ${access[0]}` });

    // The leak check, while signed in. The search finds what is there: the token in its own file, [secret] in a frame.
    broker.ledger.flush();
    const tokens = [...access, ...refresh];
    const needles = tokens
      .flatMap((t) => [t, `Bearer ${t}`].flatMap((form) => [form, Buffer.from(form).toString("base64")]))
      .map((n) => Buffer.from(n));
    const found = (bytes: Buffer) => needles.filter((n) => bytes.includes(n)).map((n) => n.toString());
    const scan = () => filesUnder(home).flatMap(([path, bytes]) => found(bytes).map((n) => `${path}: ${n}`));
    const stored = readdirSync(join(home, "logins")).map((f) => readFileSync(join(home, "logins", f)));
    expect(stored.some((bytes) => bytes.includes(Buffer.from(access[0]!)))).toBe(true);
    expect(frames.some((f) => f.includes(Buffer.from("[secret]")))).toBe(true);
    expect(filesUnder(home).map(([path]) => path)).toEqual(
      expect.arrayContaining([join(home, "tether.db"), join(home, "tether.db-wal")]),
    );
    expect(logged.some((line) => line.includes("signed in"))).toBe(true);
    expect(scan()).toEqual([]);
    expect(frames.flatMap(found)).toEqual([]);
    expect(logged.flatMap((line) => found(Buffer.from(line)))).toEqual([]);

    // Logout revokes both tokens at the server and deletes them: refused again, the API not asked.
    const [report] = await logins.logout(EXT);
    expect(report).toMatchObject({ login: "github", deleted: true, notes: [] });
    expect([...oauth.revoked].sort()).toEqual([...tokens].sort());
    const hits = api.hits.length;
    const after = await whoami();
    expect(after).toMatchObject({ ok: false, error: { code: "denied" } });
    expect(textOf(after)).toContain("tether login github-issues");
    expect(api.hits.length).toBe(hits);

    // And once the store is checkpointed and closed.
    await session.close();
    await broker.close();
    expect(scan()).toEqual([]);
    expect(frames.flatMap(found)).toEqual([]);
    expect(logged.flatMap((line) => found(Buffer.from(line)))).toEqual([]);
  },
  SLOW,
);
