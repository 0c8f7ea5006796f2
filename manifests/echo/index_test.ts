import { assertEquals, testKit } from "@tether/ext/testing";
import * as echo from "./index.ts";

Deno.test("echo answers the text it was given", async () => {
  const kit = testKit(echo, { name: "echo" });
  assertEquals(await kit.tool("echo", { text: "hi there" }), {
    ok: true,
    value: { content: [{ type: "text", text: "hi there" }], terminate: false },
  });
});

Deno.test("count reports each step as a partial and answers the count", async () => {
  const kit = testKit(echo, { name: "echo" });
  const reply = await kit.tool("count", { n: 3 });
  assertEquals(reply, {
    ok: true,
    value: {
      content: [
        { type: "text", text: "Counted to 3" },
        { type: "json", json: { n: 3 } },
      ],
      terminate: false,
    },
  });
  assertEquals(kit.reports, ["counted 1 of 3", "counted 2 of 3", "counted 3 of 3"]);
});

Deno.test("count refuses past 100, and bad arguments name the field", async () => {
  const kit = testKit(echo, { name: "echo" });
  assertEquals(await kit.tool("count", { n: 101 }), {
    ok: false,
    error: { code: "refused", msg: "n must be at most 100" },
  });
  assertEquals(await kit.tool("echo", { text: 5 }), {
    ok: false,
    error: { code: "bad_arguments", msg: "tool 'echo': expected string at .text, got 5" },
  });
});
