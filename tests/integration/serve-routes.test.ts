/**
 * `tether serve`'s route and compaction methods over a real WebSocket (the
 * server in this process, on a loopback port; real jailed satellites behind
 * it): session.context, session.routes and session.route, session.strategies,
 * session.prefer_strategy, session.compact and session.folds, in snake_case,
 * with a params error named by field. Extensions: written to a temporary folder.
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
  helper: {
    manifest: `
[[route]]
name = "ping"
description = "Answers pong."

[[context]]
name = "where"
description = "Says which session this is."

[[compaction]]
name = "first"
description = "Folds the first two messages."

[[compaction]]
name = "last"
description = "Folds the last message."
`,
    code: `import type { Route, Strategy } from "@tether/ext";
export const tools = {};
const ping: Route = (request, session) => \`pong \${request} in \${session.session_id}\`;
const first: Strategy = () => ({ summary: "first", folds: [{ from: 0, to: 1, text: "one and two" }] });
const last: Strategy = (input) => ({ summary: "last", folds: [{ from: input.messages.length - 1, to: input.messages.length - 1, text: "the last" }] });
export const routes = { ping };
export const compactions = { first, last };
export const contexts = { where: (session: { session_id: string }) => \`You are in \${session.session_id}.\` };
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

/** One request; its answer (result or error). */
function rpc(method: string, params: unknown): Promise<Record<string, unknown>> {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-serve-routes-"));
  fixtures = writeExtensions("tether-serve-routes-ext-", EXTENSIONS);
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: silentLogger });
  writeFileSync(join(broker.home, "policy.toml"), "");
  await broker.registry.install(join(fixtures, "helper"));
  broker.registry.approve("helper");
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

test("routes, strategies, a compaction and its folds over the WebSocket", async () => {
  expect(await rpc("session.open", { id: "wire-1", workspace: tmp })).toMatchObject({ result: { id: "wire-1" } });
  expect(await rpc("session.context", { session: "wire-1" })).toEqual({
    jsonrpc: "2.0",
    id: expect.any(Number),
    result: [{ extension: "helper", source: "context:where", text: "You are in wire-1." }],
  });
  expect(await rpc("session.routes", { session: "wire-1" })).toMatchObject({
    result: [{ name: "ping", extension: "helper", description: "Answers pong." }],
  });
  expect(
    await rpc("session.route", { session: "wire-1", extension: "helper", route: "ping", request: "hi" }),
  ).toMatchObject({
    result: {
      outcome: { ok: true, response: "pong hi in wire-1" },
      extension: "helper",
      route: "ping",
      invocation_id: expect.any(Number),
      blocked_by: null,
      notes: [],
      trace: [],
    },
  });
  expect(
    await rpc("session.route", { session: "wire-1", extension: "helper", route: "nope", request: "hi" }),
  ).toMatchObject({
    result: {
      outcome: {
        ok: false,
        error: { code: "unknown_tool", msg: "Unknown route 'helper/nope'; this session serves [helper/ping]" },
      },
    },
  });

  expect(await rpc("session.strategies", { session: "wire-1" })).toMatchObject({
    result: { current: "first", preferred: null },
  });
  expect(await rpc("session.prefer_strategy", { session: "wire-1", strategy: "last" })).toEqual({
    jsonrpc: "2.0",
    id: expect.any(Number),
    result: { strategy: "last" },
  });
  const messages = [
    { role: "user", content: "a" },
    { role: "assistant", content: "b" },
    { role: "user", content: "c" },
  ];
  const compacted = await rpc("session.compact", { session: "wire-1", messages, reason: "requested", budget: 100 });
  expect(compacted).toMatchObject({
    result: {
      outcome: {
        ok: true,
        compaction_id: expect.any(Number),
        summary: "last",
        folds: [{ from: 2, to: 2, text: "the last" }],
      },
      strategy: "last",
      extension: "helper",
      hook_text: [],
      notes: [],
      trace: [],
    },
  });
  const id = (compacted["result"] as { outcome: { compaction_id: number } }).outcome.compaction_id;
  await rpc("session.compact", { session: "wire-1", messages, reason: "requested", budget: 100, strategy: "first" });

  const all = (await rpc("session.folds", { session: "wire-1" }))["result"] as {
    compaction_id: number;
    strategy: string;
    from: number;
    to: number;
  }[];
  expect(all.map((f) => [f.strategy, f.from, f.to])).toEqual([
    ["last", 2, 2],
    ["first", 0, 1],
  ]);
  expect(await rpc("session.folds", { session: "wire-1", compaction_id: id })).toMatchObject({
    result: [
      {
        compaction_id: id,
        strategy: "last",
        extension: "helper",
        from: 2,
        to: 2,
        text: "the last",
        created_at: expect.any(Number),
      },
    ],
  });

  expect(await rpc("session.compact", { session: "wire-1", messages, reason: "requested", budget: 0 })).toMatchObject({
    error: { code: -32602, data: { code: "bad_arguments", field: "budget" } },
  });
  expect(await rpc("session.close", { session: "wire-1" })).toMatchObject({ result: { closed: true } });
});
