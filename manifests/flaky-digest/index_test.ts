import { assertEquals, testKit } from "@tether/ext/testing";
import * as digest from "./index.ts";

Deno.test("feed_digest answers its one line", async () => {
  assertEquals(await testKit(digest, { name: "flaky-digest" }).tool("feed_digest"), {
    ok: true,
    value: { content: [{ type: "text", text: "nothing new in the feed today" }], terminate: false },
  });
});
