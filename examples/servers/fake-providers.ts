/**
 * Fake model providers on loopback, for the provider tests and `make demo`: one speaking an
 * OpenAI-compatible streaming API (`POST /v1/chat/completions`, SSE `data:`
 * chunks then `data: [DONE]`, usage in the last chunk) and one an
 * Anthropic-compatible one (`POST /v1/messages`, SSE events `message_start`,
 * `content_block_delta`, `message_delta` with usage, `message_stop`). Each
 * streams the deltas it was made with, one write per event.
 *
 * The model asked for picks a failure: `boom` answers 500, `garbled` a stream
 * whose event is not JSON.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeRequest {
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: Record<string, unknown>;
}

export interface FakeProvider {
  /** `http://127.0.0.1:<port>/v1` */
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: readonly FakeRequest[];
  close(): Promise<void>;
}

export interface FakeScript {
  readonly deltas: readonly string[];
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export const DEFAULT_SCRIPT: FakeScript = { deltas: ["Hello", ", ", "world", "!"], inputTokens: 12, outputTokens: 4 };

type Speak = (res: ServerResponse, model: string, script: FakeScript) => void;

const sse = (res: ServerResponse) =>
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });

const openAi: Speak = (res, model, script) => {
  sse(res);
  if (model === "garbled") {
    res.write("data: {not json\n\n");
    res.end("data: [DONE]\n\n");
    return;
  }
  const chunk = (body: unknown) => res.write(`data: ${JSON.stringify(body)}\n\n`);
  chunk({
    id: "c1",
    object: "chat.completion.chunk",
    model,
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
  });
  for (const content of script.deltas)
    chunk({
      id: "c1",
      object: "chat.completion.chunk",
      model,
      choices: [{ index: 0, delta: { content }, finish_reason: null }],
    });
  chunk({
    id: "c1",
    object: "chat.completion.chunk",
    model,
    choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
  });
  chunk({
    id: "c1",
    object: "chat.completion.chunk",
    model,
    choices: [],
    usage: {
      prompt_tokens: script.inputTokens,
      completion_tokens: script.outputTokens,
      total_tokens: script.inputTokens + script.outputTokens,
    },
  });
  res.end("data: [DONE]\n\n");
};

const anthropic: Speak = (res, model, script) => {
  sse(res);
  const event = (name: string, body: unknown) =>
    res.write(`event: ${name}\ndata: ${typeof body === "string" ? body : JSON.stringify(body)}\n\n`);
  event("message_start", {
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model,
      content: [],
      usage: { input_tokens: script.inputTokens, output_tokens: 1 },
    },
  });
  event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
  event("ping", { type: "ping" });
  if (model === "garbled") event("content_block_delta", "{not json");
  for (const text of script.deltas)
    event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });
  event("content_block_stop", { type: "content_block_stop", index: 0 });
  event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: script.outputTokens },
  });
  event("message_stop", { type: "message_stop" });
  res.end();
};

async function start(path: string, speak: Speak, script: FakeScript, port: number): Promise<FakeProvider> {
  const requests: FakeRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      } catch {
        // A request that is not JSON is answered 400 below.
      }
      requests.push({ path: req.url ?? "", headers: req.headers, body });
      if (req.method !== "POST" || req.url !== path || body.stream !== true) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `expected POST ${path} with stream: true` } }));
        return;
      }
      const model = typeof body.model === "string" ? body.model : "";
      if (model === "boom") {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the model is on fire" } }));
        return;
      }
      speak(res, model, script);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${bound}/v1`,
    port: bound,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An OpenAI-compatible provider: `POST /v1/chat/completions` with `stream: true`; `port` 0 picks a free one. */
export function fakeOpenAi(script: FakeScript = DEFAULT_SCRIPT, port = 0): Promise<FakeProvider> {
  return start("/v1/chat/completions", openAi, script, port);
}

/** An Anthropic-compatible provider: `POST /v1/messages` with `stream: true`. */
export function fakeAnthropic(script: FakeScript = DEFAULT_SCRIPT, port = 0): Promise<FakeProvider> {
  return start("/v1/messages", anthropic, script, port);
}
