/**
 * A fake OpenAI-compatible Chat Completions API on loopback, for driving a
 * real harness (pi) in tests: a protocol fake, the harness is real. It
 * scripts one turn: while the conversation holds no tool result it answers
 * the scripted tool calls (when the request offers every tool they name),
 * then a text saying what the tools answered. Streamed (SSE `data:` chunks,
 * then `data: [DONE]`) or not, as asked. Every request is kept for the test.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A request body larger than this is refused (413): no harness sends one in these tests. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface ScriptedCall {
  readonly name: string;
  readonly arguments: unknown;
}

export interface ChatMessage {
  readonly role: string;
  readonly content?: unknown;
  readonly tool_call_id?: string;
  readonly tool_calls?: unknown[];
}

export interface ChatTool {
  readonly type: string;
  readonly function: { readonly name: string; readonly description?: string; readonly parameters?: unknown };
}

export interface ChatRequest {
  readonly model: string;
  readonly stream?: boolean;
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ChatTool[];
}

export interface FakeOpenAiApi {
  /** The base URL a client is given: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  /** Every /chat/completions request body, in order. */
  readonly requests: ChatRequest[];
  /** The `tool` messages of the request that answered the scripted calls. */
  readonly toolResults: ChatMessage[];
  close(): Promise<void>;
}

/** The streamed chunks of one assistant message: its text or its tool calls, then the finish. */
function chunks(model: string, text: string | null, calls: readonly ScriptedCall[]): unknown[] {
  const base = { id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model };
  const out: unknown[] = [{ ...base, choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null }] }];
  if (text !== null) out.push({ ...base, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] });
  calls.forEach((call, index) => {
    const start = { index, id: `call_${index + 1}`, type: "function", function: { name: call.name, arguments: "" } };
    const args = { index, function: { arguments: JSON.stringify(call.arguments) } };
    out.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [start] }, finish_reason: null }] });
    out.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [args] }, finish_reason: null }] });
  });
  const finish = calls.length > 0 ? "tool_calls" : "stop";
  out.push({
    ...base,
    choices: [{ index: 0, delta: {}, finish_reason: finish }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
  return out;
}

/** Starts the fake; it asks for `calls` (all in one assistant message) once per conversation. */
export async function startFakeOpenAiApi(calls: readonly ScriptedCall[]): Promise<FakeOpenAiApi> {
  const requests: ChatRequest[] = [];
  const toolResults: ChatMessage[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) parts.push(chunk);
    });
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0];
      if (req.method !== "POST" || path !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `the fake serves POST /v1/chat/completions, not ${path}` } }));
        return;
      }
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end();
        return;
      }
      const request = JSON.parse(Buffer.concat(parts).toString("utf8")) as ChatRequest;
      requests.push(request);
      const offered = new Set((request.tools ?? []).map((t) => t.function.name));
      const answered = request.messages.filter((m) => m.role === "tool");
      const callNow = answered.length === 0 && calls.length > 0 && calls.every((c) => offered.has(c.name));
      if (answered.length > 0 && toolResults.length === 0) toolResults.push(...answered);
      const text = callNow
        ? null
        : answered.length > 0
          ? `the tools said: ${JSON.stringify(answered.map((m) => m.content))}`
          : "ok";
      const scripted = callNow ? calls : [];
      if (request.stream !== true) {
        const toolCalls = scripted.map((c, i) => ({
          id: `call_${i + 1}`,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id: "chatcmpl-fake",
            object: "chat.completion",
            created: 0,
            model: request.model,
            choices: [
              {
                index: 0,
                message: {
                  role: "assistant",
                  content: text,
                  ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
                },
                finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop",
              },
            ],
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
          }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const chunk of chunks(request.model, text, scripted)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    toolResults,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
