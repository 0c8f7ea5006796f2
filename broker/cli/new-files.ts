/**
 * What `tether new` writes: a manifest, an entry module with one tool and one
 * hook, their tests on the SDK's test kit, and the import setup (package.json
 * for npm and editors, deno.json for Deno reading node_modules as npm laid it).
 */

/** The files of a new extension named `name`, keyed by path; `sdkVersion` is @tether/ext's. */
export function newExtensionFiles(name: string, sdkVersion: string): Record<string, string> {
  const manifest = `#:schema ./node_modules/@tether/ext/manifest.schema.json
name = "${name}"
version = "0.1.0"
description = "Greets people by name, and keeps the model from shouting at them."
entry = "index.ts"

[[tool]]
name = "greet"
description = "Greets someone by name, and says how many greetings came before."
parameters = { type = "object", properties = { name = { type = "string", maxLength = 100 } }, required = ["name"] }

# Asked before every tool call of the session (docs/hooks.md in the Tether repository has the events).
[[hook]]
event = "tool_call"

[limits]
kv_bytes = 4096
`;

  const index =
    `import { kv } from "@tether/cap";
import { decodeArgs, hook, outcome, proceed, refuse, text, unhandled, v, type Tool } from "@tether/ext";

const Greeting = v.object({ name: v.string() });

export const tools: Record<string, Tool> = {
  greet: async (args, ctx) => {
    const { name } = decodeArgs(Greeting, args);
    // A refusal is a value the model reads and can repair; a throw is a crash.
    if (name.trim() === "") return refuse('name must not be empty, e.g. {"name": "Ada"}');
    ctx.report(\`greeting \${name}\`);
    // kv is this extension's own durable storage; the broker judges every call.
    const before = ((await kv.get("greeted")) as number | null) ?? 0;
    await kv.put("greeted", before + 1);
    return outcome([text(\`Hello, \${name}! (greeting number \${before + 1})\`)]);
  },
};

export const hooks = {
  tool_call: hook("tool_call", (call) => {
    if (call.tool !== "greet") return unhandled;
    const { name } = decodeArgs(Greeting, call.arguments);
    return /[A-Z]/.test(name) && name === name.toUpperCase() ? { block: \`do not ` +
    `shout: write the name as it is spelled, e.g. "Ada", not "\${name}"\` } : proceed;
  }),
};
`;

  const test =
    `import { assertEquals, FakeKv, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

const said = (text: string) => ({ ok: true, value: { content: [{ type: "text", text }], terminate: false } });

Deno.test("greet greets, counts in kv and reports progress", async () => {
  const kit = testKit(extension, { name: "${name}" });
  assertEquals(await kit.tool("greet", { name: "Ada" }), said("Hello, Ada! (greeting number 1)"));
  assertEquals(await kit.tool("greet", { name: "Grace" }), said("Hello, Grace! (greeting number 2)"));
  assertEquals(kit.kv.value("greeted"), 2);
  assertEquals(kit.reports, ["greeting Ada", "greeting Grace"]);
});

Deno.test("greet refuses an empty name, and bad arguments name the field", async () => {
  const kit = testKit(extension, { name: "${name}" });
  assertEquals(await kit.tool("greet", { name: " " }), { ok: false, error: ` +
    `{ code: "refused", msg: 'name must not be empty, e.g. {"name": "Ada"}' } });
  assertEquals(await kit.tool("greet", { name: 5 }), { ok: false, error: { ` +
    `code: "bad_arguments", msg: "tool 'greet': expected string at .name, got 5" } });
});

Deno.test("greet with a full kv: the broker's quota refusal, with its rule", async () => {
  const kit = testKit(extension, { name: "${name}", kv: new FakeKv({}, 7) });
  const reply = await kit.tool("greet", { name: "Ada" });
  assertEquals(reply, { ok: false, error: { code: "denied", msg: "tool 'greet': kv.put: ` +
    `storage quota of 7 bytes would be exceeded (8 bytes) (rule: limits.kv_bytes)" } });
});

Deno.test("the tool_call hook blocks a shouted name and lets the rest through", async () => {
  const kit = testKit(extension, { name: "${name}" });
  assertEquals(await kit.hook("tool_call", { tool: "greet", call_id: "c1", arguments: { name: "ADA" } }), {
    ok: true,
    value: { block: 'do not shout: write the name as it is spelled, e.g. "Ada", not "ADA"' },
  });
  assertEquals(await kit.hook("tool_call", { tool: "greet", call_id: ` +
    `"c2", arguments: { name: "Ada" } }), { ok: true, value: {} });
  assertEquals(await kit.hook("tool_call", { tool: "sh", call_id: "c3", arguments: {} }), {
    ok: false,
    error: { code: "unhandled", msg: "The hook for 'tool_call' does nothing for this event" },
  });
});
`;

  const packageJson = {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    // For types and tests only: the broker bundles its own SDK into the artifact.
    devDependencies: { "@tether/cap": `^${sdkVersion}`, "@tether/ext": `^${sdkVersion}` },
  };
  const denoJson = {
    // Deno reads the packages npm laid out in node_modules: nothing is fetched.
    nodeModulesDir: "manual",
    // Declaration files (the SDK's, valibot's 600 KB) used but not checked themselves: `deno test` and
    // `deno check` take about half the time, and the folder's own code is checked as before.
    compilerOptions: { skipLibCheck: true },
    // --allow-read: the test kit reads manifest.toml, to judge fetches by its [net] allow as the broker does.
    tasks: { check: "deno check index.ts index_test.ts", test: "deno test --allow-read=." },
  };
  return {
    "manifest.toml": manifest,
    "index.ts": index,
    "index_test.ts": test,
    "package.json": `${JSON.stringify(packageJson, null, 2)}\n`,
    "deno.json": `${JSON.stringify(denoJson, null, 2)}\n`,
    ".gitignore": "node_modules/\n",
  };
}
