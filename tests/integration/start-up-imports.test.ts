/**
 * What a command loads before it does anything: undici (brokered requests,
 * sign-ins), esbuild (installs, job scripts), execa (command hooks) and tldts
 * (the public suffix list, for a rule's check) are
 * the largest packages the broker uses and most commands never need them, so
 * they are imported at their first use, not with the modules that use them
 * (~125 ms of every `tether list` here, and execa ~50 ms more from the
 * bundle; docs/performance.md). Ajv too. `tether mcp` over stdio, and the
 * MCP server itself, load neither the MCP SDK nor zod at all (its own engine,
 * broker/mcp/protocol/: the SDK and its zod schemas were ~175 ms of start-up);
 * only --http loads the SDK's transport. Jails start with Node's own spawn. A static import added anywhere
 * under these entry points would put them back on every start: a child
 * Node loads each entry through tsx with a resolve hook that refuses those
 * packages, so such an import fails here, naming the module that asked; and
 * one required (CommonJS, past the hook) while the entry loads is named too.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { REPO } from "../unit/support/repo-files.js";

const run = promisify(execFile);

/** Packages no module may import at load time. */
const LAZY = ["undici", "esbuild", "execa", "tldts"];
/** And one the broker loads at its first use (the SDK's HTTP transport, under --http, imports it too). */
const LAZY_BUT_FOR_MCP = [...LAZY, "ajv"];
/** And what `tether mcp` over stdio never loads: the MCP SDK and zod (its own engine serves). */
const NO_SDK = [...LAZY_BUT_FOR_MCP, "@modelcontextprotocol/sdk", "zod"];

/** What the broker, a session and `tether mcp` load before their first call, each with the packages it must not. */
const ENTRIES: [string, string[]][] = [
  ["broker/broker.ts", LAZY_BUT_FOR_MCP],
  ["broker/sessions/session.ts", LAZY_BUT_FOR_MCP],
  ["broker/mcp/command.ts", NO_SDK],
  ["broker/mcp/server.ts", NO_SDK],
];

const hook = (lazy: readonly string[]) => `
const lazy = new Set(${JSON.stringify(lazy)});
export async function resolve(specifier, context, next) {
  const bare = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
  if (lazy.has(bare)) throw new Error("imported at load time: " + specifier + " (from " + context.parentURL + ")");
  return next(specifier, context);
}`;

/**
 * Loads `code` (an ES module's text, after tsx and the hook are registered) in a child Node, refusing the
 * packages `lazy` names; its stderr, or "" when it loaded.
 */
async function loadRefusing(code: string, lazy: readonly string[] = LAZY): Promise<string> {
  // Looked for in require()'s cache too, but esbuild: tsx itself requires it to load the entry.
  const lazyRequired = lazy.filter((name) => name !== "esbuild");
  const script = `
    const { register: tsx } = await import("tsx/esm/api");
    tsx();
    const { register } = await import("node:module");
    // Registered last, so asked first: it sees every specifier before tsx resolves it.
    register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hook(lazy))}));
    ${code}
    // require() does not pass the resolve hook: what it loaded is in its cache.
    const cache = (await import("node:module")).createRequire(process.cwd() + "/").cache;
    const required = Object.keys(cache).filter((file) => ${JSON.stringify(lazyRequired)}.some((name) => file.includes("/node_modules/" + name + "/")));
    if (required.length > 0) throw new Error("required at load time: " + required.join(", "));`;
  try {
    await run(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, timeout: 60_000 });
    return "";
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
}

test.each(ENTRIES)("%s loads without any of %p", async (entry, lazy) => {
  const url = pathToFileURL(join(REPO, entry)).href;
  expect(await loadRefusing(`await import(${JSON.stringify(url)});`, lazy)).toBe("");
});

test("`tether mcp`'s stdio path (the server and its transport, loaded as the session opens) loads neither the SDK nor zod", async () => {
  const url = pathToFileURL(join(REPO, "broker/mcp/command.ts")).href;
  expect(await loadRefusing(`await (await import(${JSON.stringify(url)})).stdioServerModules();`, NO_SDK)).toBe("");
});

test.each(NO_SDK)("the probe itself refuses %s when a module imports it", async (name) => {
  // A module importing it statically, as a broker file would: the hook must name it.
  const module = `data:text/javascript,${encodeURIComponent(`import * as m from "${name}"; export default m;`)}`;
  expect(await loadRefusing(`await import(${JSON.stringify(module)});`, NO_SDK)).toContain(
    `imported at load time: ${name}`,
  );
});

test("the probe itself names a package required while the entry loads", async () => {
  // As hostname.ts once loaded the suffix list: createRequire at module level.
  const module = `data:text/javascript,${encodeURIComponent(
    `import { createRequire } from "node:module"; createRequire(${JSON.stringify(`${REPO}/`)})("tldts/dist/cjs/src/data/trie.js");`,
  )}`;
  expect(await loadRefusing(`await import(${JSON.stringify(module)});`)).toContain("required at load time: ");
});
