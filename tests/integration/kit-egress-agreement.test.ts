/**
 * The test kit's `net` and the broker judge `[net] allow` rules with one
 * matcher: for rules × URLs × methods (wildcards, IDN and punycode, case,
 * trailing dots, ports, IP literals in every spelling, CIDRs, `/*` prefixes and
 * exact paths, dot segments and encoded slashes, queries), the kit's verdict
 * under real Deno (`FakeNet` with the rules, a catch-all route behind them)
 * equals the broker's judge under Node — same allowed, same refusal, same
 * words, same rule errors. And a kit reading the manifest beside the test
 * refuses, `manifest:no-match`, a URL a route would answer but no rule allows.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { judge, type EgressPolicy } from "../../broker/egress/judge.js";
import { REACH_CLASSES } from "../../broker/egress/reach.js";
import { parseRule, RuleError, type EgressRule } from "../../broker/egress/rules.js";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { REPO } from "../support/satellites.js";

const RULES = [
  "https://api.example.com",
  "https://api.example.com/v1/*",
  "https://api.example.com/v1",
  "https://api.example.com/v1/items/",
  "GET,HEAD https://api.example.com/v1/items",
  "post https://api.example.com/v1/items/**",
  "https://*.example.com",
  "https://*.Example.COM/v2/*",
  "http://API.example.com:8080/",
  "https://api.example.com.:443/v1",
  "https://bücher.example/shop",
  "https://xn--bcher-kva.example",
  "https://a_b.example.com/x",
  "http://10.0.0.5",
  "http://10.0.0.5:8080/v1/*",
  "http://[fd00::1]/v1",
  "http://[FD00:0:0::1]:80",
  "http://[10.20.0.0/16]",
  "http://[fd00:1::/48]/api",
  "GET http://127.0.0.1:17311/v1",
  // Rules the broker refuses: the kit must refuse them with its words.
  "https://*.co.uk",
  "https://*",
  "https://*.nip.io",
  "https://s3.amazonaws.com",
  "https://api.example.com/v1/*/items",
  "https://api.example.com/v1?x=1",
  "https://api.example.com/a/../b",
  "https://api.example.com/a%2Fb",
  "ftp://files.example.com",
  "https://0x7f000001",
  "http://[0.0.0.0/0]",
  "https://user@api.example.com",
  "GET/POST https://api.example.com",
];

const URLS = [
  "https://api.example.com",
  "https://API.EXAMPLE.COM/v1",
  "https://api.example.com./v1/x",
  "https://api.example.com:443/v1",
  "https://api.example.com:8443/v1",
  "http://api.example.com/v1",
  "https://api.example.com/v1/",
  "https://api.example.com/v10",
  "https://api.example.com/v1/items",
  "https://api.example.com/v1/items?x=1",
  "https://api.example.com/v1/items/42?y=2#frag",
  "https://api.example.com/v1/*",
  "https://api.example.com/v1/../admin",
  "https://api.example.com/v1/%2e%2e/admin",
  "https://api.example.com/v1/..%2fadmin",
  "https://api.example.com/v1/a%2Fb",
  "https://api.example.com/v1%2fx",
  "https://api.example.com/v1/a%5cb",
  "https://api.example.com/v1\\x",
  "https://api.example.com/v1/x;y",
  "https://api.example.com/V1",
  "https://a.example.com/",
  "https://a.b.example.com/v2/x",
  "https://a.b.example.com/v2x",
  "https://example.com/",
  "https://EXAMPLE.com./v2/",
  "https://evil-example.com/",
  "https://example.com.evil.test/",
  "https://bücher.example/shop/1",
  "https://xn--bcher-kva.example/shop",
  "https://BÜCHER.example/",
  "https://ｂücher.example/shop",
  "https://a_b.example.com/x/y",
  "http://api.example.com:8080/",
  "http://api.example.com:80/",
  "http://10.0.0.5/",
  "http://10.0.0.5:8080/v1/x",
  "http://010.0.0.5/",
  "http://167772165/",
  "http://0xa.0.0.5/",
  "http://10.5/",
  "http://10.0.0.6/",
  "http://[fd00::1]/v1/x",
  "http://[fd00:0::1]/v1",
  "http://[fd00::2]/v1",
  "http://[::ffff:10.0.0.5]/",
  "http://10.20.3.4/",
  "http://[fd00:1:0:5::1]/api/x",
  "http://[fd00:2::1]/api",
  "http://127.0.0.1:17311/v1/forecast?city=Lisbon",
  "http://127.1:17311/v1/forecast",
  "http://localhost:17311/v1",
  "https://user:pw@api.example.com/",
  "ftp://api.example.com/",
  "https://a..example.com/",
  "https://xn--zz.example/",
];

const METHODS = ["GET", "post", "HEAD"];

type Verdict = { allowed: true } | { allowed: false; msg: string } | { ruleError: string };
interface Net {
  readonly rules: readonly string[];
  readonly cases: ReadonlyArray<{ readonly url: string; readonly method: string }>;
}

/** The broker's refusals the manifest's layer makes; anything else is a later layer and must not occur here. */
const MANIFEST_LAYER = /^(url|manifest:no-match|path:.*)$/;

/** The broker's side: its judge, every layer but the manifest's opened wide. */
async function brokerVerdicts(net: Net): Promise<Verdict[]> {
  let approved: EgressRule[];
  try {
    approved = net.rules.map((text) => parseRule(text));
  } catch (err) {
    if (!(err instanceof RuleError)) throw err;
    return net.cases.map(() => ({ ruleError: err.message }));
  }
  const policy: EgressPolicy = {
    extension: "agree",
    approved,
    operatorDeny: [],
    reach: { classes: new Set(REACH_CLASSES), metadata: [] },
    offline: false,
    sessionAllow: null,
  };
  const resolve = async () => [{ address: "93.184.216.34", family: 4 as const }];
  const out: Verdict[] = [];
  for (const { url, method } of net.cases) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      // The broker's words for it (exchange.ts): Node's URL parser and Deno's must agree on what is one.
      out.push({ allowed: false, msg: `net.fetch refused: '${url}' is not a URL (rule: url)` });
      continue;
    }
    const verdict = await judge(parsed, method, policy, resolve);
    if (verdict.allowed) {
      out.push({ allowed: true });
      continue;
    }
    if (!MANIFEST_LAYER.test(verdict.rule)) throw new Error(`${method} ${url}: refused by ${verdict.rule}`);
    out.push({ allowed: false, msg: `net.fetch refused: ${verdict.reason} (rule: ${verdict.rule})` });
  }
  return out;
}

/** The kit's side, under Deno: one FakeNet per rule set, a catch-all route behind the rules. */
const KIT_SIDE = `import { FakeNet } from "@tether/ext/testing";
const nets = JSON.parse(await new Response(Deno.stdin.readable).text());
const out = [];
for (const { rules, cases } of nets) {
  let net;
  try {
    net = new FakeNet({ "*": { body: "routed" } }, "agree", { allow: rules });
  } catch (err) {
    out.push(cases.map(() => ({ ruleError: err.message })));
    continue;
  }
  const verdicts = [];
  for (const { url, method } of cases) {
    const reply = await net.serve({ url, method });
    verdicts.push(reply.ok ? { allowed: true } : { allowed: false, msg: reply.error.msg });
  }
  out.push(verdicts);
}
console.log(JSON.stringify(out));
`;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function deno(args: readonly string[], cwd: string, env: Record<string, string>, stdin = ""): Promise<Ran> {
  return new Promise((done) => {
    const child = execFile(denoBinary(), args, { cwd, env, maxBuffer: 64 * 2 ** 20 }, (err, stdout, stderr) => {
      done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, stdout, stderr });
    });
    child.stdin!.end(stdin);
  });
}

let tmp: string;
let env: Record<string, string>;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "tether-kit-egress-"));
  env = {
    PATH: process.env.PATH ?? "",
    HOME: tmp,
    DENO_DIR: join(tmp, "deno-dir"),
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
  };
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const CONFIG = join(REPO, "manifests", "deno.json");

test("the kit's net (under Deno) and the broker's judge (under Node) give every rule × URL × method one verdict", async () => {
  const cases = URLS.flatMap((url) => METHODS.map((method) => ({ url, method })));
  const valid = RULES.filter((text) => {
    try {
      parseRule(text);
      return true;
    } catch {
      return false;
    }
  });
  // Each rule alone, and every valid rule at once (the first that allows, prefix refusals across rules).
  const nets: Net[] = [...RULES.map((rule) => ({ rules: [rule], cases })), { rules: valid, cases }];
  const broker = await Promise.all(nets.map(brokerVerdicts));

  writeFileSync(join(tmp, "kit_side.ts"), KIT_SIDE);
  const ran = await deno(["run", "--no-remote", "--config", CONFIG, "kit_side.ts"], tmp, env, JSON.stringify(nets));
  if (ran.code !== 0) throw new Error(`deno run failed (exit ${ran.code}):\n${ran.stdout}${ran.stderr}`);
  const kit = JSON.parse(ran.stdout) as Verdict[][];

  const disagreements: string[] = [];
  nets.forEach((net, n) => {
    net.cases.forEach(({ url, method }, c) => {
      const [b, k] = [broker[n]![c]!, kit[n]![c]!];
      const ruleError = "ruleError" in b && "ruleError" in k && k.ruleError.includes(b.ruleError);
      if (!ruleError && JSON.stringify(b) !== JSON.stringify(k))
        disagreements.push(
          `${JSON.stringify(net.rules)} ${method} ${url}: broker ${JSON.stringify(b)}, kit ${JSON.stringify(k)}`,
        );
    });
  });
  expect(disagreements).toEqual([]);

  // The cases are not all one answer: each kind of verdict occurs, many times.
  const all = broker.flat();
  const allowed = all.filter((v) => "allowed" in v && v.allowed).length;
  const count = (pattern: RegExp) => all.filter((v) => "msg" in v && pattern.test(v.msg)).length;
  expect(allowed).toBeGreaterThan(100);
  expect(count(/\(rule: manifest:no-match\)$/)).toBeGreaterThan(1000);
  expect(count(/\(rule: path:/)).toBeGreaterThan(10);
  expect(count(/names the address/)).toBeGreaterThan(5);
  expect(count(/\(rule: url\)$/)).toBeGreaterThan(10);
  expect(all.filter((v) => "ruleError" in v).length).toBe(13 * cases.length);
}, 180_000);

const MANIFEST = `name = "links"
version = "1.0.0"
description = "Fetches links."
entry = "index.ts"

[[tool]]
name = "get"
description = "Fetches a URL."
parameters = { type = "object", properties = { url = { type = "string" } }, required = ["url"] }

[net]
allow = ["GET https://api.example.com/v1/*"]
`;

const INDEX = `import { net } from "@tether/cap";
import { decodeArgs, outcome, text, v, type Tool } from "@tether/ext";

export const tools: Record<string, Tool> = {
  get: async (args) => {
    const { url } = decodeArgs(v.object({ url: v.string() }), args);
    const res = await net.fetch(url);
    return outcome([text(res.text())]);
  },
};
`;

const TEST = `import { assertEquals, testKit } from "@tether/ext/testing";
import * as links from "./index.ts";

// Routes for the whole host: the manifest allows only GET under /v1.
const ROUTES = { "https://api.example.com/*": { body: "served" } };
const noMatch = (what: string) => ({
  ok: false,
  error: {
    code: "denied",
    msg: \`tool 'get': net.fetch refused: no approved rule of 'links' allows \${what} (rule: manifest:no-match)\`,
  },
});
const served = { ok: true, value: { content: [{ type: "text", text: "served" }], terminate: false } };

Deno.test("the manifest beside the test judges: a route outside its rules is refused manifest:no-match", async () => {
  const kit = testKit(links, { net: ROUTES });
  assertEquals(await kit.tool("get", { url: "https://api.example.com/v1/items" }), served);
  assertEquals(await kit.tool("get", { url: "https://api.example.com/v2/items" }), noMatch("GET https://api.example.com/v2/items"));
  assertEquals(await kit.tool("get", { url: "https://api.example.com/v10" }), noMatch("GET https://api.example.com/v10"));
});

Deno.test("an allowed URL no route answers fails as unanswered, naming the rule", async () => {
  const kit = testKit(links, { net: {} });
  assertEquals(await kit.tool("get", { url: "https://api.example.com/v1/x" }), {
    ok: false,
    error: {
      code: "unreachable",
      msg: "tool 'get': net.fetch failed: no route of the test answers GET https://api.example.com/v1/x (allowed by the rule 'GET https://api.example.com/v1/*')",
    },
  });
});

Deno.test("manifest: an explicit URL judges the same; false leaves routes alone; allow narrows", async () => {
  const manifest = new URL("./manifest.toml", import.meta.url);
  const explicit = testKit(links, { manifest, net: ROUTES });
  assertEquals(await explicit.tool("get", { url: "https://api.example.com/v2/items" }), noMatch("GET https://api.example.com/v2/items"));
  const routesAlone = testKit(links, { name: "links", manifest: false, net: ROUTES });
  assertEquals(await routesAlone.tool("get", { url: "https://api.example.com/v2/items" }), served);
  const narrowed = testKit(links, { allow: [], net: ROUTES });
  assertEquals(await narrowed.tool("get", { url: "https://api.example.com/v1/items" }), noMatch("GET https://api.example.com/v1/items"));
});

Deno.test("a rule the broker refuses, or a manifest the kit cannot read, is an error saying what to change", () => {
  let message = "";
  try {
    testKit(links, { allow: ["https://api.example.com/v1/*/items"] });
  } catch (err) {
    message = (err as Error).message;
  }
  assertEquals(message.startsWith("testKit's allow: egress rule 'https://api.example.com/v1/*/items': '*' inside a path"), true);
  try {
    testKit(links, { manifest: new URL("./missing.toml", import.meta.url) });
  } catch (err) {
    message = (err as Error).message;
  }
  assertEquals(message.includes("missing.toml") && message.includes("--allow-read"), true);
});
`;

describe("a kit with the manifest beside its test", () => {
  let folder: string;
  beforeAll(() => {
    folder = join(tmp, "links");
    mkdirSync(folder);
    writeFileSync(join(folder, "manifest.toml"), MANIFEST);
    writeFileSync(join(folder, "index.ts"), INDEX);
    writeFileSync(join(folder, "index_test.ts"), TEST);
  });

  test("deno test: routes answer only what the manifest's rules allow", async () => {
    const args = ["test", "--no-remote", "--config", CONFIG, `--allow-read=${folder}`, "index_test.ts"];
    const ran = await deno(args, folder, env);
    const output = `${ran.stdout}${ran.stderr}`;
    if (ran.code !== 0) throw new Error(`deno test failed (exit ${ran.code}):\n${output}`);
    expect(output).toMatch(/ok \| 4 passed \| 0 failed/);
  }, 180_000);

  test("without read permission the routes alone answer, and the kit says why, once", async () => {
    const probe = `import { testKit } from "@tether/ext/testing";
import * as links from "./index.ts";
Deno.test("routes alone", async () => {
  const kit = testKit(links, { name: "links", net: { "https://api.example.com/*": { body: "served" } } });
  await kit.tool("get", { url: "https://api.example.com/v2/items" });
  const reply = await kit.tool("get", { url: "https://api.example.com/v2/items" });
  if (!reply.ok) throw new Error(JSON.stringify(reply));
});
`;
    writeFileSync(join(folder, "unread_test.ts"), probe);
    const ran = await deno(["test", "--no-remote", "--config", CONFIG, "unread_test.ts"], folder, env);
    const output = `${ran.stdout}${ran.stderr}`;
    if (ran.code !== 0) throw new Error(`deno test failed (exit ${ran.code}):\n${output}`);
    const said = output.split("testKit could not read").length - 1;
    expect(said).toBe(1);
    expect(output).toContain(`${join(folder, "manifest.toml")} (deno test has no read permission for it)`);
  }, 180_000);
});
