/**
 * A fake Anthropic Messages API on loopback, for driving the real Claude Code
 * CLI in tests (it is a protocol fake: the harness is real). It scripts one
 * turn: while the conversation holds no tool result it answers a `tool_use`
 * of the scripted tool (when the request offers that tool), then a text
 * saying what the tool answered. Streamed (SSE) or not, as asked; every other
 * path (token counting, …) answers a small JSON object.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ToolResult {
  readonly tool_use_id: string;
  readonly is_error?: boolean;
  readonly content: unknown;
}

export interface FakeMessagesApi {
  readonly url: string;
  /** The tool names each /v1/messages request offered. */
  readonly offered: string[][];
  /** The tool results Claude Code sent back, in order. */
  readonly results: ToolResult[];
  close(): Promise<void>;
}

interface Block {
  readonly type: "text" | "tool_use";
  readonly text?: string;
  readonly id?: string;
  readonly name?: string;
  readonly input?: unknown;
}

/** The SSE events of one assistant message made of `blocks`. */
function events(model: string, blocks: readonly Block[], stop: string): unknown[] {
  const out: unknown[] = [
    {
      type: "message_start",
      message: {
        id: "msg_fake",
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 1 },
      },
    },
  ];
  blocks.forEach((b, index) => {
    if (b.type === "tool_use") {
      out.push({ type: "content_block_start", index, content_block: { ...b, input: {} } });
      out.push({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) },
      });
    } else {
      out.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
      out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: b.text } });
    }
    out.push({ type: "content_block_stop", index });
  });
  out.push({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
  out.push({ type: "message_stop" });
  return out;
}

/** Starts the fake; it asks for `tool` with `input` once per conversation. */
export async function startFakeMessagesApi(tool: string, input: unknown): Promise<FakeMessagesApi> {
  const offered: string[][] = [];
  const results: ToolResult[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0];
      if (req.method !== "POST" || path !== "/v1/messages") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      const request = JSON.parse(body) as {
        model: string;
        stream?: boolean;
        tools?: { name: string }[];
        messages: { content: string | { type: string }[] }[];
      };
      const names = (request.tools ?? []).map((t) => t.name);
      offered.push(names);
      const last = request.messages.at(-1)?.content;
      const answered = (Array.isArray(last) ? last : []).filter(
        (c) => c.type === "tool_result",
      ) as unknown as ToolResult[];
      results.push(...answered);
      const blocks: Block[] =
        answered.length === 0 && names.includes(tool)
          ? [{ type: "tool_use", id: `toolu_${offered.length}`, name: tool, input }]
          : [
              {
                type: "text",
                text: answered.length > 0 ? `the tool said: ${JSON.stringify(answered[0]!.content)}` : "ok",
              },
            ];
      const stop = blocks[0]!.type === "tool_use" ? "tool_use" : "end_turn";
      if (request.stream !== true) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id: "msg_fake",
            type: "message",
            role: "assistant",
            model: request.model,
            content: blocks,
            stop_reason: stop,
            stop_sequence: null,
            usage: { input_tokens: 10, output_tokens: 5 },
          }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const e of events(request.model, blocks, stop))
        res.write(`event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    offered,
    results,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
