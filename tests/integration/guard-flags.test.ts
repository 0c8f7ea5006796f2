/**
 * The guard example's `/flag` against every spelling: the `cap_call` hooks
 * are shown the request the broker judged (the host in its normal form and
 * every address it resolved to, with the IPv4 an IPv6 address carries), so a
 * flag on an address or a name holds however the URL writes it and whatever
 * name resolves to it. Generated probes: every spelling is first fetched with
 * no flag (those the policy allows are recorded), then with the flag: each one
 * the policy allowed must now be refused by the guard, and no request reaches
 * the server.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import type { Resolver } from "../../broker/egress/judge.js";
import { silentLogger } from "../../broker/base/log.js";
import { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

let tmp: string;
let server: Server;
let port = 0;
let hits = 0;
let broker: Broker;
let session: Session;

/** Test names: where each resolves. */
const ZONE: Record<string, ReadonlyArray<{ address: string; family: 4 | 6 }>> = {
  "api.test": [{ address: "127.0.0.1", family: 4 }],
  "sub.api.test": [{ address: "127.0.0.1", family: 4 }],
  "loop.test": [{ address: "127.0.0.1", family: 4 }],
  "mapped.test": [{ address: "::ffff:127.0.0.1", family: 6 }],
  "nat64.test": [{ address: "64:ff9b::7f00:1", family: 6 }],
};
const resolve: Resolver = async (name) => {
  const answers = ZONE[name];
  if (answers === undefined) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
  return answers;
};

/** Every way a URL can reach 127.0.0.1: literal spellings, IPv6 embeddings, names resolving to it. */
const ADDRESS_SPELLINGS = [
  "127.0.0.1",
  "2130706433",
  "0x7f000001",
  "0177.0.0.1",
  "0x7f.0.0.1",
  "127.1",
  "127.0.1",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[0:0:0:0:0:ffff:7f00:1]",
  "[64:ff9b::7f00:1]",
  "[::127.0.0.1]",
  "[2002:7f00:1::]",
  "loop.test",
  "LOOP.test.",
  "mapped.test",
  "nat64.test",
  "api.test",
];

/** Every way a URL can name api.test (and what lies under it). */
const NAME_SPELLINGS = [
  "api.test",
  "API.TEST",
  "api.test.",
  "Api.Test.",
  "\uff41\uff50\uff49.test",
  "api\u3002test",
  "sub.api.test",
  "SUB.API.TEST.",
];

async function fetchVia(host: string): Promise<{ ok: boolean; code?: string; message?: string }> {
  const url = `http://${host}:${port}/probe`;
  const report = await session.callTool("fetch", JSON.stringify({ url }));
  if (!report.outcome.ok) return { ok: false, code: report.outcome.error.code, message: report.outcome.error.msg };
  const block = report.outcome.value.content[0]!;
  return (block.type === "json" ? block.json : undefined) as { ok: boolean; code?: string; message?: string };
}

/** Allowed by the policy: fetched, or allowed and then not reachable (an address nothing routes). */
const passedPolicy = (r: { ok: boolean; code?: string }) => r.ok || r.code === "unreachable";

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-guard-flags-"));
  server = createServer((req, res) => {
    hits++;
    req.resume();
    res.end("reached");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as AddressInfo).port;
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: silentLogger, resolve });
  writeFileSync(join(broker.home, "policy.toml"), "[net]\nallow_private = true\n");
  const dir = join(tmp, "src", "fetcher");
  mkdirSync(join(tmp, "src"), { recursive: true });
  cpSync(join(REPO, "tests/integration/fixtures/fetcher"), dir, { recursive: true });
  const rules = [
    ...["api.test", "*.api.test", "loop.test", "mapped.test", "nat64.test"].map((h) => `http://${h}:${port}`),
    ...["127.0.0.1", "[::ffff:7f00:1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::127.0.0.1]"].map(
      (h) => `http://${h}:${port}`,
    ),
  ];
  const manifest = join(dir, "manifest.toml");
  writeFileSync(
    manifest,
    readFileSync(manifest, "utf8").replace(
      /^allow = \[[\s\S]*?^\]$/m,
      `allow = [${rules.map((r) => JSON.stringify(r)).join(", ")}]`,
    ),
  );
  for (const source of [dir, join(REPO, "manifests/guard")]) {
    const { installed } = await broker.registry.install(source);
    broker.registry.approve(installed.manifest.name);
  }
  mkdirSync(join(tmp, "ws"));
  session = await Session.open(broker, { id: "flags", workspace: join(tmp, "ws") });
}, 120_000);

afterAll(async () => {
  await session?.close();
  await broker?.close();
  server?.closeAllConnections();
  await new Promise<void>((r) => server?.close(() => r()));
  rmSync(tmp, { recursive: true, force: true });
});

describe.each([
  ["127.0.0.1", ADDRESS_SPELLINGS],
  ["::ffff:127.0.0.1", ADDRESS_SPELLINGS],
  ["api.test", NAME_SPELLINGS],
  ["API.test.", NAME_SPELLINGS],
])("/flag %s", (flag, spellings) => {
  const allowed: string[] = [];

  test("without the flag, the policy allows the spellings its rules name (recorded for the next test)", async () => {
    for (const host of spellings) if (passedPolicy(await fetchVia(host))) allowed.push(host);
    // Most spellings pass the policy: otherwise this would prove little about the guard.
    expect(allowed.length).toBeGreaterThanOrEqual(Math.ceil(spellings.length / 2));
  }, 120_000);

  test("with the flag, every one of them is refused by the guard, and none reaches the server", async () => {
    expect((await session.runCommand(`/flag ${flag}`)).outcome.ok).toBe(true);
    try {
      const before = hits;
      const notRefused: string[] = [];
      for (const host of spellings) {
        const r = await fetchVia(host);
        if (r.ok || !(r.message ?? "").includes("(rule: hook:guard)")) {
          // A spelling the policy refuses anyway is refused; one it allowed must be the guard's.
          if (allowed.includes(host) || r.ok) notRefused.push(`${host}: ${JSON.stringify(r)}`);
        }
      }
      expect(notRefused).toEqual([]);
      expect(hits).toBe(before);
    } finally {
      const list = await session.runCommand("/flag");
      for (const entry of String(
        (list.outcome as { value?: { content?: Array<{ text?: string }> } }).value?.content?.[0]?.text ?? "",
      )
        .replace(/^flagged: /, "")
        .split(", ")) {
        if (entry !== "" && entry !== "no hosts are flagged") await session.runCommand(`/unflag ${entry}`);
      }
    }
  }, 120_000);
});
