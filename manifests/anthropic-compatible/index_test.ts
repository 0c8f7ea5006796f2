import { assertEquals, testKit } from "@tether/ext/testing";
import * as anthropic from "./index.ts";

const URL = "http://127.0.0.1:17321/v1/messages";
const BASE = "http://127.0.0.1:17321/v1";
const event = (name: string, body: unknown) => `event: ${name}\ndata: ${JSON.stringify(body)}\n\n`;
const STREAM =
  event("message_start", {
    type: "message_start",
    message: { model: "claude-sonnet-4", usage: { input_tokens: 9, output_tokens: 1 } },
  }) +
  event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }) +
  event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Bon" } }) +
  event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "jour" } }) +
  event("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3 } }) +
  event("message_stop", { type: "message_stop" });
const ASK = {
  model: "claude-sonnet-4",
  messages: [
    { role: "system" as const, content: "be brief" },
    { role: "user" as const, content: "hi" },
  ],
  base_url: BASE,
};

Deno.test("local-anthropic streams the messages API: each text delta a partial, the whole text and usage answered", async () => {
  const kit = testKit(anthropic, {
    name: "anthropic-compatible",
    net: { [`POST ${URL}`]: { headers: { "content-type": "text/event-stream" }, body: STREAM } },
  });
  assertEquals(await kit.complete("local-anthropic", ASK), {
    ok: true,
    value: {
      text: "Bonjour",
      usage: { input_tokens: 9, output_tokens: 3 },
      stop_reason: "end_turn",
      model: "claude-sonnet-4",
    },
  });
  assertEquals(kit.reports, ["Bon", "jour"]);
  const sent = JSON.parse(new TextDecoder().decode(kit.net.requests[0]!.body!));
  assertEquals([sent.system, sent.messages, sent.stream], ["be brief", [{ role: "user", content: "hi" }], true]);
});

Deno.test("local-anthropic: an error status is a refusal naming the status and the API's words", async () => {
  const kit = testKit(anthropic, {
    name: "anthropic-compatible",
    net: { [`POST ${URL}`]: { status: 529, body: "overloaded" } },
  });
  assertEquals(await kit.complete("local-anthropic", ASK), {
    ok: false,
    error: { code: "refused", msg: "complete 'local-anthropic': the API answered 529: overloaded" },
  });
});

Deno.test("local-anthropic: a stream cut before message_stop is a refusal saying so", async () => {
  const kit = testKit(anthropic, {
    name: "anthropic-compatible",
    net: { [`POST ${URL}`]: { body: STREAM.split("event: message_stop")[0]! } },
  });
  assertEquals(await kit.complete("local-anthropic", ASK), {
    ok: false,
    error: { code: "refused", msg: "complete 'local-anthropic': the API's stream ended without message_stop" },
  });
});
