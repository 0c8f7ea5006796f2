/**
 * `node dist/bench/mcp-layer.js` (or `npx tsx bench/mcp-layer.ts`): what
 * `tether mcp`'s server adds to a session's call, in one process, without
 * the stdio pipe — the broker's CPU per call (`process.cpuUsage`) of
 * `Session.callTool` on echo, of the SDK's `Client` calling a bare SDK
 * `Server` whose handler answers at once over the SDK's in-memory transport
 * (the SDK's own share, both sides), and of the same client calling
 * `createMcpServer` over the session (Tether's own engine, not the SDK's
 * server). The server's own cost is the last less the first two (which takes
 * off the bare SDK server's share too, so it reads a little low). The echo extension is installed with `TOOLS` more tools
 * (default 60: a session with several extensions) and `ROUTES` resources and
 * as many resource templates (default 10), since what a server does per
 * listed item on every call shows only with many. The client lists the tools
 * and the resources first, as a harness does. `N` calls per round (default 2000),
 * `ROUNDS` rounds (default 9), the variants' order reversed every other round;
 * medians printed. `ONLY` (a regular expression) keeps the variants it names.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createMcpServer } from "../broker/mcp/server.js";
import { ECHO_DIR, copyExtension, installApproved, openBroker, openSession } from "./lib/home.js";

const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const TOOLS = Number(process.env.TOOLS ?? 60);
const ROUTES = Number(process.env.ROUTES ?? 10);
const ARGS = { text: "hi" };

/**
 * The echo extension with `count` more tools, each with a schema of three properties, and `routes`
 * resource routes of each kind (a fixed URI, a URI template).
 */
function wideEcho(dir: string, count: number, routes: number): void {
  const tool = (i: number) =>
    `\n[[tool]]\nname = "t${i}"\ndescription = "Tool ${i}."\nparameters = { type = "object", properties = ` +
    `{ path = { type = "string", description = "A path" }, limit = { type = "integer" }, ` +
    `recursive = { type = "boolean" } }, required = ["path"] }\n`;
  const route = (i: number) =>
    `\n[[route]]\nname = "f${i}"\ndescription = "Fixed ${i}."\nresource = { uri = "docs://fixed/${i}" }\n` +
    `\n[[route]]\nname = "t${i}"\ndescription = "Template ${i}."\nresource = { uri = "docs://items${i}/{id}" }\n`;
  const more =
    Array.from({ length: count }, (_, i) => tool(i)).join("") +
    Array.from({ length: routes }, (_, i) => route(i)).join("");
  copyExtension(ECHO_DIR, dir, (m) => m.replace("[limits]", `${more}\n[limits]`));
  writeFileSync(
    join(dir, "index.ts"),
    `import { decodeArgs, outcome, text, v, type Route, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = {
  echo: (args) => outcome([text(decodeArgs(v.object({ text: v.string() }), args).text)]),
  count: () => outcome([text("0")]),
};
for (let i = 0; i < ${count}; i++) tools["t" + i] = () => outcome([text("t")]);
export const routes: Record<string, Route> = {};
for (let i = 0; i < ${routes}; i++) routes["f" + i] = routes["t" + i] = () => "r";
`,
  );
}

async function connected(server: Pick<Server, "connect">): Promise<Client> {
  const client = new Client({ name: "mcp-layer-bench", version: "0" });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  return client;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const home = mkdtempSync(join(tmpdir(), "tether-mcp-layer-"));
const broker = openBroker(home);
try {
  wideEcho(join(home, "echo"), TOOLS, ROUTES);
  await installApproved(broker, join(home, "echo"));
  const session = await openSession(broker, "plain", home, ["echo"]);
  const tether = await connected(createMcpServer(session, { version: "0" }));
  await tether.listTools();
  if (ROUTES > 0) {
    const listed = (await tether.listResources()).resources.length;
    if (listed !== ROUTES) throw new Error(`the server lists ${listed} resources, not ${ROUTES}`);
  }
  const bare = new Server({ name: "bare", version: "0" }, { capabilities: { tools: {} } });
  bare.setRequestHandler(CallToolRequestSchema, (request) => ({
    content: [{ type: "text", text: String((request.params.arguments as typeof ARGS).text) }],
  }));
  const sdk = await connected(bare);

  const all: Record<string, () => Promise<unknown>> = {
    "Session.callTool": () => session.callTool("echo", JSON.stringify(ARGS)),
    "SDK client + bare SDK server": () => sdk.callTool({ name: "echo", arguments: ARGS }),
    "SDK client + tether mcp's server": () => tether.callTool({ name: "echo", arguments: ARGS }),
  };
  const only = process.env.ONLY === undefined ? null : new RegExp(process.env.ONLY);
  const variants = Object.entries(all).filter(([name]) => only === null || only.test(name));
  const cpu = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, call] of round % 2 === 0 ? variants : [...variants].reverse()) {
      for (let i = 0; i < N / 10; i++) await call();
      const before = process.cpuUsage();
      for (let i = 0; i < N; i++) await call();
      const used = process.cpuUsage(before);
      cpu.get(name)!.push((used.user + used.system) / N);
    }
  }
  console.log(
    `tether mcp's server over a session, in one process: echo with ${TOOLS} more tools and ${ROUTES} resources ` +
      `and templates each, ${N} calls a round`,
  );
  console.log("broker CPU µs per call, medians of", ROUNDS, "rounds");
  for (const [name, xs] of cpu) console.log(`  ${name.padEnd(34)} ${median(xs).toFixed(1).padStart(7)}`);
  const [plain, sdkOnly, server] = [...Object.keys(all)].map((name) => cpu.get(name));
  if (plain !== undefined && sdkOnly !== undefined && server !== undefined)
    console.log(
      `  ${"the server's own (last - first two)".padEnd(34)} ${(median(server) - median(plain) - median(sdkOnly)).toFixed(1).padStart(7)}`,
    );
  await tether.close();
  await sdk.close();
  await session.close();
} finally {
  await broker.close();
  rmSync(home, { recursive: true, force: true });
}
