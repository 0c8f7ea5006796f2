/**
 * The SDK as its npm packages, used outside the checkout: `npm pack` of
 * @tether/ext and @tether/cap, installed offline (an empty npm cache, no
 * registry) into an extension folder under the system's temp dir; the folder
 * type-checks with plain TypeScript (what an editor reads) and with
 * `deno check`, its tests pass under `deno test`, and the broker installs it
 * and serves a tool — with its own SDK, never the folder's copy.
 */
import { execFile } from "node:child_process";
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { packSdk } from "../../broker/sdk/pack.js";
import { WIRE_VERSION } from "../../jail-runtime/wire/version.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const MANIFEST = `#:schema ./node_modules/@tether/ext/manifest.schema.json
name = "notes"
version = "0.1.0"
description = "Keeps notes."
entry = "index.ts"

[[tool]]
name = "remember"
description = "Stores a note; answers how many are kept."
parameters = { type = "object", properties = { note = { type = "string" } }, required = ["note"] }

[[hook]]
event = "tool_call"
`;

const INDEX = `import { kv } from "@tether/cap";
import { decodeArgs, hook, outcome, proceed, text, unhandled, v, type Tool } from "@tether/ext";

export const tools: Record<string, Tool> = {
  remember: async (args) => {
    const { note } = decodeArgs(v.object({ note: v.string() }), args);
    const notes = ((await kv.get("notes")) as string[] | null) ?? [];
    await kv.put("notes", [...notes, note]);
    return outcome([text(\`\${notes.length + 1} notes kept\`)]);
  },
};

export const hooks = {
  tool_call: hook("tool_call", (call) => (call.tool === "forget" ? { block: "notes are kept for good" } : call.tool === "remember" ? proceed : unhandled)),
};
`;

const TEST = `import { assertEquals, FakeKv, testKit } from "@tether/ext/testing";
import * as notes from "./index.ts";

Deno.test("remember keeps notes in kv", async () => {
  const kit = testKit(notes, { name: "notes" });
  assertEquals(await kit.tool("remember", { note: "a" }), { ok: true, value: { content: [{ type: "text", text: "1 notes kept" }], terminate: false } });
  assertEquals(await kit.tool("remember", { note: "b" }), { ok: true, value: { content: [{ type: "text", text: "2 notes kept" }], terminate: false } });
  assertEquals(kit.kv.value("notes"), ["a", "b"]);
});

Deno.test("a full kv is the broker's quota refusal", async () => {
  const kit = testKit(notes, { name: "notes", kv: new FakeKv({}, 8) });
  const reply = await kit.tool("remember", { note: "a" });
  assertEquals(reply, { ok: false, error: { code: "denied", msg: "tool 'remember': kv.put: storage quota of 8 bytes would be exceeded (10 bytes) (rule: limits.kv_bytes)" } });
});

Deno.test("the hook blocks forget", async () => {
  const kit = testKit(notes, { name: "notes" });
  assertEquals(await kit.hook("tool_call", { tool: "forget", call_id: "c1", arguments: {} }), { ok: true, value: { block: "notes are kept for good" } });
});
`;

interface Ran {
  code: number;
  output: string;
}

function run(file: string, args: readonly string[], cwd: string, env: Record<string, string>): Promise<Ran> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { cwd, env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env }, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, output: `${stdout}${stderr}` });
      },
    );
  });
}

function expectOk(ran: Ran, what: string): string {
  if (ran.code !== 0) throw new Error(`${what} failed (exit ${ran.code}):\n${ran.output}`);
  return ran.output;
}

let tmp: string;
let ext: string;
let deno: Record<string, string>;
let tarballs: { ext: string; cap: string };

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-sdk-package-"));
  tarballs = await packSdk(join(tmp, "packed"));
  ext = join(tmp, "notes");
  mkdirSync(ext);
  writeFileSync(join(ext, "package.json"), JSON.stringify({ name: "notes", private: true, type: "module" }, null, 2));
  writeFileSync(join(ext, "deno.json"), JSON.stringify({ nodeModulesDir: "manual" }, null, 2));
  writeFileSync(join(ext, "manifest.toml"), MANIFEST);
  writeFileSync(join(ext, "index.ts"), INDEX);
  writeFileSync(join(ext, "index_test.ts"), TEST);
  const npmHome = join(tmp, "npm-home");
  mkdirSync(npmHome);
  // Offline, from an empty cache, with no registry reachable: only the tarballs can satisfy it.
  const npmEnv = {
    HOME: npmHome,
    npm_config_cache: join(npmHome, "cache"),
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_update_notifier: "false",
  };
  expectOk(
    await run(
      "npm",
      ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--save-dev", tarballs.ext, tarballs.cap],
      ext,
      npmEnv,
    ),
    "npm install of the tarballs",
  );
  deno = { HOME: join(tmp, "deno-home"), DENO_DIR: join(tmp, "deno-dir"), DENO_NO_UPDATE_CHECK: "1" };
}, 300_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("the packages are versioned by the wire: major version = WIRE_VERSION, and cap depends on exactly ext", () => {
  const ext = JSON.parse(readFileSync(join(REPO, "packages", "ext", "package.json"), "utf8")) as {
    version: string;
    tether: { wire: number };
  };
  const cap = JSON.parse(readFileSync(join(REPO, "packages", "cap", "package.json"), "utf8")) as {
    version: string;
    dependencies: Record<string, string>;
  };
  expect(Number(ext.version.split(".")[0])).toBe(WIRE_VERSION);
  expect(ext.tether.wire).toBe(WIRE_VERSION);
  expect(cap.version).toBe(ext.version);
  expect(cap.dependencies["@tether/ext"]).toBe(ext.version);
  expect(tarballs.ext).toMatch(new RegExp(`tether-ext-${ext.version}\\.tgz$`));
});

test("the installed package holds the runtime, the test kit, the manifest schema and valibot, and no broker-only code", () => {
  const pkg = join(ext, "node_modules", "@tether", "ext");
  for (const file of [
    "lib/ext/mod.js",
    "lib/ext/mod.d.ts",
    "lib/ext/testing/mod.js",
    "lib/cap/mod.d.ts",
    "manifest.schema.json",
    "node_modules/valibot/package.json",
  ])
    expect(existsSync(join(pkg, file))).toBe(true);
  // The broker's msgpack codec and the satellite's framing are never loaded by an extension's tests.
  for (const file of ["lib/wire/codec.js", "lib/cap/framing.js", "lib/cap/prelude.js"])
    expect(existsSync(join(pkg, file))).toBe(false);
  expect(readFileSync(join(ext, "node_modules", "@tether", "cap", "index.js"), "utf8")).toContain(
    'from "@tether/ext/cap"',
  );
});

test("plain TypeScript (what an editor reads) resolves the SDK's types from node_modules", async () => {
  const tsc = join(REPO, "node_modules", "typescript", "bin", "tsc");
  const args = [
    tsc,
    "--noEmit",
    "--strict",
    "--target",
    "es2022",
    "--module",
    "esnext",
    "--moduleResolution",
    "bundler",
    "--lib",
    "es2023,dom",
    "index.ts",
  ];
  expectOk(await run(process.execPath, args, ext, {}), "tsc on index.ts");
}, 120_000);

test("deno check and deno test pass in the folder, offline, with only the packed SDK", async () => {
  const checked = expectOk(
    await run(denoBinary(), ["check", "--no-remote", "index.ts", "index_test.ts"], ext, deno),
    "deno check",
  );
  expect(checked).toContain("Check index_test.ts");
  const tested = expectOk(await run(denoBinary(), ["test", "--no-remote"], ext, deno), "deno test");
  expect(tested).toMatch(/ok \| 3 passed \| 0 failed/);
}, 180_000);

describe("the broker installs the folder with its own SDK", () => {
  let broker: Broker;
  beforeAll(() => {
    // The folder's own copy of the SDK is tampered with: were it bundled, the marker would be in the artifact.
    for (const file of ["lib/ext/mod.js", "lib/cap/mod.js"])
      appendFileSync(
        join(ext, "node_modules", "@tether", "ext", file),
        '\nexport const OWN_COPY = "the-folder-s-own-sdk-copy";\n',
      );
    const home = join(tmp, "home");
    mkdirSync(home);
    broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  });
  afterAll(async () => {
    await broker?.close();
  });

  test("install bundles the broker's SDK, not node_modules/@tether; the tool runs in a satellite", async () => {
    const { installed } = await broker.registry.install(ext);
    expect(readFileSync(installed.artifactPath, "utf8")).not.toContain("the-folder-s-own-sdk-copy");
    broker.registry.approve("notes");
    const first = await broker.callTool("notes", "remember", JSON.stringify({ note: "a" }), { session: "default" });
    const second = await broker.callTool("notes", "remember", JSON.stringify({ note: "b" }), { session: "default" });
    expect(first).toEqual({ ok: true, value: { content: [{ type: "text", text: "1 notes kept" }], terminate: false } });
    expect(second).toEqual({
      ok: true,
      value: { content: [{ type: "text", text: "2 notes kept" }], terminate: false },
    });
  }, 120_000);

  test("an import of the test kit from the extension's code is an install error naming it", async () => {
    const kitUser = join(tmp, "kit-user");
    cpSync(ext, kitUser, { recursive: true });
    writeFileSync(
      join(kitUser, "index.ts"),
      `import { testKit } from "@tether/ext/testing";\n${INDEX}export const kit = testKit;\n`,
    );
    await expect(broker.registry.install(kitUser)).rejects.toThrow(
      "import '@tether/ext/testing' in index.ts is not allowed: an artifact gets the SDK only as '@tether/ext' and '@tether/cap'",
    );
  }, 120_000);
});
