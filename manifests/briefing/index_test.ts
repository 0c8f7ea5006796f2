import { assertEquals, testKit } from "@tether/ext/testing";
import * as briefing from "./index.ts";

const CONVENTIONS = "temperatures in °C, dates as YYYY-MM-DD, and ask before deleting anything";

Deno.test("session_start names the workspace's folder and the conventions", async () => {
  const kit = testKit(briefing, { name: "briefing" });
  assertEquals(
    await kit.hook("session_start", { session_id: "s1", workspace: "/home/ada/projects/atlas/", source: "cli" }),
    {
      ok: true,
      value: { context: `briefing: you are working in 'atlas'. Conventions here: ${CONVENTIONS}.` },
    },
  );
});

Deno.test("before_agent_start adds a line only when the prompt is about the weather", async () => {
  const kit = testKit(briefing, { name: "briefing" });
  assertEquals(await kit.hook("before_agent_start", { prompt: "What's the forecast for Lisbon?" }), {
    ok: true,
    value: { context: "briefing: the weather tools answer in °C; say which city a forecast is for." },
  });
  assertEquals(await kit.hook("before_agent_start", { prompt: "Rename the build folder" }), { ok: true, value: {} });
});

Deno.test("context appends a system reminder to the conversation", async () => {
  const kit = testKit(briefing, { name: "briefing" });
  const said = { role: "user", content: "hi" };
  assertEquals(await kit.hook("context", { messages: [said] }), {
    ok: true,
    value: { messages: [said, { role: "system", content: `briefing: reminder — ${CONVENTIONS}.` }] },
  });
});

Deno.test("a payload that does not match the event's schema is bad_arguments naming the field", async () => {
  const kit = testKit(briefing, { name: "briefing" });
  // Cast: the point is a payload the broker would never send.
  const reply = await kit.hook("context", { messages: "none" } as never);
  assertEquals(reply, {
    ok: false,
    error: { code: "bad_arguments", msg: "event 'context': expected Array at .messages, got \"none\"" },
  });
});
