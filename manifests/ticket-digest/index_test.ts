import { assertEquals, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

Deno.test("ticket_digest answers", async () => {
  const kit = testKit(extension, { name: "ticket-digest" });
  assertEquals(await kit.tool("ticket_digest", {}), {
    ok: true,
    value: { content: [{ type: "text", text: "No open tickets." }], terminate: false },
  });
});
