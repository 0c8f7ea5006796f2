/**
 * `tether serve`'s search methods over a real WebSocket (the server in this
 * process, on a loopback port; real jailed satellites behind it):
 * session.search_providers, session.prefer_search and session.search, in
 * snake_case, with a params error named by field and a bad query refused.
 * Extensions: written to a temporary folder.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { envOptions } from "../support/env-options.js";
import { writeExtensions } from "./support/write-extensions.js";

const EXTENSIONS = {
  finder: {
    manifest: `
[[search]]
name = "local"
description = "Finds local notes."

[[search]]
name = "remote"
description = "Finds remote pages."
deadline_ms = 2000
`,
    code: `import type { SearchProvider } from "@tether/ext";
export const tools = {};
const local: SearchProvider = (query) => [{ title: \`local \${query}\` }];
const remote: SearchProvider = (query) => [{ title: \`remote \${query}\`, url: "https://r.example/" }];
export const search = { local, remote };
`,
  },
} as const;

const TOKEN = "t".repeat(64);
let tmp: string;
let fixtures: string;
let broker: Broker;
let server: ServeServer;
let ws: WebSocket;
let nextId = 1;
const waiting = new Map<number, (message: Record<string, unknown>) => void>();

function rpc(method: string, params: unknown): Promise<Record<string, unknown>> {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-serve-search-"));
  fixtures = writeExtensions("tether-serve-search-ext-", EXTENSIONS);
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: silentLogger });
  writeFileSync(join(broker.home, "policy.toml"), "");
  await broker.registry.install(join(fixtures, "finder"));
  broker.registry.approve("finder");
  server = new ServeServer({ broker, token: TOKEN, log: silentLogger, say: () => {} });
  const { url } = await server.listen({ port: 0 });
  ws = new WebSocket(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  ws.on("message", (data) => {
    const message = JSON.parse(data.toString()) as Record<string, unknown>;
    waiting.get(message["id"] as number)?.(message);
  });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
});

afterAll(async () => {
  ws?.close();
  await server?.shutdown(Promise.resolve());
  rmSync(tmp, { recursive: true, force: true });
  rmSync(fixtures, { recursive: true, force: true });
});

test("providers listed, a preference saved, a search merged, over the WebSocket", async () => {
  expect(await rpc("session.open", { id: "find-1", workspace: tmp })).toMatchObject({ result: { id: "find-1" } });
  expect(await rpc("session.search_providers", { session: "find-1" })).toMatchObject({
    result: {
      providers: [
        { name: "local", extension: "finder", description: "Finds local notes." },
        { name: "remote", extension: "finder", description: "Finds remote pages.", deadline_ms: 2000 },
      ],
      excluded: [],
      unavailable: [],
      preference: null,
      notes: [],
    },
  });
  expect(
    await rpc("session.prefer_search", { session: "find-1", preference: { rank: ["remote"], exclude: ["local"] } }),
  ).toMatchObject({ result: { preference: { rank: ["remote"], exclude: ["local"] } } });
  expect(await rpc("session.search", { session: "find-1", query: "tether", options: { limit: 3 } })).toMatchObject({
    result: {
      results: [{ title: "remote tether", url: "https://r.example/", provider: "remote", extension: "finder" }],
      providers: [{ name: "remote", extension: "finder", ok: true, results: 1, invocation_id: expect.any(Number) }],
      notes: [],
    },
  });
  expect(await rpc("session.prefer_search", { session: "find-1", preference: null })).toMatchObject({
    result: { preference: null },
  });
  const both = (await rpc("session.search", { session: "find-1", query: "x" })) as {
    result: { results: { title: string }[] };
  };
  expect(both.result.results.map((r) => r.title)).toEqual(["local x", "remote x"]);
});

test("bad params are named; a query that does not fit is a Tether bad_arguments", async () => {
  await rpc("session.open", { id: "find-2", workspace: tmp });
  expect(await rpc("session.prefer_search", { session: "find-2", preference: { rank: ["Not A Name"] } })).toMatchObject(
    { error: { code: -32602, message: expect.stringContaining("search provider's name") } },
  );
  expect(await rpc("session.search", { session: "find-2", query: "" })).toMatchObject({
    error: { data: { code: "bad_arguments" }, message: expect.stringContaining("Not a search query") },
  });
});
