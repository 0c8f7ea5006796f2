/**
 * Providers over `tether serve` (a real WebSocket; the server in this process,
 * real jailed satellites behind it) and the `tether providers` command: the
 * catalog listed (with a session's ranking), a completion streamed as
 * `providers.partial` notifications in order before its answer, a session's
 * preference saved with `session.prefer_providers`, a failing API answered in
 * the result, a bad request named by field.
 */
import { execa } from "execa";
import { join } from "node:path";
import { WebSocket } from "ws";
import { silentLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { openProviderHome, type ProviderHome } from "../support/provider-home.js";
import { REPO } from "../support/satellites.js";

const TOKEN = "p".repeat(64);
const SLOW = 120_000;
let p: ProviderHome;
let server: ServeServer;
let ws: WebSocket;
let nextId = 1;
const waiting = new Map<number, (message: Record<string, unknown>) => void>();
const notifications: Array<Record<string, unknown>> = [];

function rpc(method: string, params: unknown): Promise<Record<string, unknown>> {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

beforeAll(async () => {
  p = await openProviderHome("tether-serve-providers-");
  server = new ServeServer({ broker: p.broker, token: TOKEN, log: silentLogger, say: () => {} });
  const { url } = await server.listen({ port: 0 });
  ws = new WebSocket(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  ws.on("message", (data) => {
    const message = JSON.parse(data.toString()) as Record<string, unknown>;
    if (message["id"] === undefined) notifications.push(message);
    else waiting.get(message["id"] as number)?.(message);
  });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
}, SLOW);

afterAll(async () => {
  ws?.close();
  await server?.shutdown(Promise.resolve());
  await p?.close();
});

const ASK = { messages: [{ role: "user", content: "say hello" }], max_tokens: 32 };

test(
  "providers.list, then providers.complete: partials as providers.partial notifications, in order, then the answer",
  async () => {
    const listed = (await rpc("providers.list", {}))["result"] as {
      providers: Array<{ name: string; models: Array<{ id: string }> }>;
      daemon: { eligible: string[] };
    };
    expect(listed.providers.map((e) => e.name)).toEqual(["local-anthropic", "local-openai"]);
    expect(listed.providers[1]!.models.map((m) => m.id)).toContain("gpt-4o-mini");
    expect(listed.daemon.eligible).toEqual(["anthropic-compatible", "openai-compatible"]);

    const answer = await rpc("providers.complete", { ...ASK, model: "gpt-4o-mini" });
    const id = answer["id"];
    expect(answer["result"]).toEqual({
      outcome: {
        ok: true,
        text: "Hello, world!",
        usage: { input_tokens: 12, output_tokens: 4 },
        stop_reason: "stop",
        model: "gpt-4o-mini",
      },
      provider: "local-openai",
      extension: "openai-compatible",
      model: "gpt-4o-mini",
      invocation_id: expect.any(Number),
      notes: [],
      partials_dropped: 0,
    });
    // Partials are sent before the answer on the one socket: all are here now.
    expect(notifications.filter((n) => (n["params"] as { id: unknown }).id === id)).toEqual(
      ["Hello", ", ", "world", "!"].map((text) => ({
        jsonrpc: "2.0",
        method: "providers.partial",
        params: { id, text },
      })),
    );
  },
  SLOW,
);

test(
  "session.prefer_providers saves a session's ranking, which providers.list and providers.complete follow",
  async () => {
    expect(await rpc("session.open", { id: "wire-p", workspace: p.tmp })).toMatchObject({ result: { id: "wire-p" } });
    expect(
      await rpc("session.prefer_providers", { session: "wire-p", preference: { rank: ["local-openai"] } }),
    ).toMatchObject({ result: { preference: { rank: ["local-openai"], exclude: [] } } });
    expect(
      (
        (await rpc("providers.list", { session: "wire-p" }))["result"] as { providers: Array<{ name: string }> }
      ).providers.map((e) => e.name),
    ).toEqual(["local-openai", "local-anthropic"]);
    expect(await rpc("providers.complete", { ...ASK, model: "shared", session: "wire-p" })).toMatchObject({
      result: { provider: "local-openai", outcome: { ok: true } },
    });
    expect(await rpc("providers.complete", { ...ASK, model: "shared" })).toMatchObject({
      result: { provider: "local-anthropic" },
    });
    expect(await rpc("session.prefer_providers", { session: "wire-p", preference: null })).toMatchObject({
      result: { preference: null },
    });
    expect(await rpc("session.close", { session: "wire-p" })).toMatchObject({ result: { closed: true } });
  },
  SLOW,
);

test(
  "a failing API is the result's outcome; a malformed request is -32602 naming the field",
  async () => {
    expect(await rpc("providers.complete", { ...ASK, provider: "local-openai", model: "boom" })).toMatchObject({
      result: {
        outcome: { ok: false, error: { code: "refused", msg: expect.stringContaining("the API answered 500") } },
        provider: "local-openai",
      },
    });
    expect(await rpc("providers.complete", { ...ASK, model: "gpt-4o-mini", max_tokens: 0 })).toMatchObject({
      error: { code: -32602, data: { code: "bad_arguments", field: "max_tokens" } },
    });
  },
  SLOW,
);

test(
  "tether providers prints the catalog, what is not served and the daemon scope (and --json)",
  async () => {
    const run = (...args: string[]) =>
      execa(process.execPath, [join(REPO, "bin", "tether.js"), "providers", ...args], {
        env: { TETHER_HOME: p.home },
        cwd: REPO,
        stdin: "ignore",
        reject: false,
        timeout: 45_000,
      });
    const text = await run();
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toContain(
      "Providers served now, first preferred first:\n  local-anthropic (anthropic-compatible) — An Anthropic-compatible server (POST /messages with stream: true).",
    );
    expect(text.stdout).toMatch(
      / {6}gpt-4o-mini +128000 tokens {3}\$0\.15 \/ \$0\.6 per million in\/out {3}chat, tools, vision/,
    );
    expect(text.stdout).toContain(
      "  off-anthropic (off-anthropic): 'off-anthropic' is turned off globally (tether session enable off-anthropic turns it on)",
    );
    expect(text.stdout).toContain(
      "Daemon scope (@daemon): eligible: anthropic-compatible, openai-compatible; running in this process: none",
    );
    const json = await run("--json");
    expect((JSON.parse(json.stdout) as { providers: Array<{ name: string }> }).providers.map((e) => e.name)).toEqual([
      "local-anthropic",
      "local-openai",
    ]);
  },
  SLOW,
);
