import { assertEquals, testKit } from "@tether/ext/testing";
import * as openai from "./index.ts";

const URL = "http://127.0.0.1:17320/v1/chat/completions";
const BASE = "http://127.0.0.1:17320/v1";
const chunk = (body: unknown) => `data: ${JSON.stringify(body)}\n\n`;
const STREAM =
  chunk({ model: "gpt-4o-mini", choices: [{ delta: { role: "assistant", content: "" } }] }) +
  chunk({ model: "gpt-4o-mini", choices: [{ delta: { content: "Hel" } }] }) +
  chunk({ model: "gpt-4o-mini", choices: [{ delta: { content: "lo" } }] }) +
  chunk({ model: "gpt-4o-mini", choices: [{ delta: {}, finish_reason: "stop" }] }) +
  chunk({ model: "gpt-4o-mini", choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } }) +
  "data: [DONE]\n\n";
const ASK = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "hi" }], base_url: BASE };

Deno.test("local-openai streams the chat completion: each delta a partial, the whole text and usage answered", async () => {
  const kit = testKit(openai, {
    name: "openai-compatible",
    net: { [`POST ${URL}`]: { headers: { "content-type": "text/event-stream" }, body: STREAM } },
  });
  assertEquals(await kit.complete("local-openai", ASK), {
    ok: true,
    value: { text: "Hello", usage: { input_tokens: 7, output_tokens: 2 }, stop_reason: "stop", model: "gpt-4o-mini" },
  });
  assertEquals(kit.reports, ["Hel", "lo"]);
  const sent = JSON.parse(new TextDecoder().decode(kit.net.requests[0]!.body!));
  assertEquals(
    [sent.model, sent.stream, sent.max_tokens, sent.messages],
    ["gpt-4o-mini", true, 1024, [{ role: "user", content: "hi" }]],
  );
});

Deno.test("local-openai: an error status is a refusal naming the status and the API's words", async () => {
  const kit = testKit(openai, {
    name: "openai-compatible",
    net: { [`POST ${URL}`]: { status: 500, body: '{"error":"on fire"}' } },
  });
  assertEquals(await kit.complete("local-openai", ASK), {
    ok: false,
    error: { code: "refused", msg: `complete 'local-openai': the API answered 500: {"error":"on fire"}` },
  });
});

Deno.test("local-openai: a stream whose event is not JSON is a refusal saying so", async () => {
  const kit = testKit(openai, { name: "openai-compatible", net: { [`POST ${URL}`]: { body: "data: {oops\n\n" } } });
  assertEquals(await kit.complete("local-openai", ASK), {
    ok: false,
    error: {
      code: "refused",
      msg: "complete 'local-openai': the API's stream is malformed: an event is not JSON ({oops)",
    },
  });
});
