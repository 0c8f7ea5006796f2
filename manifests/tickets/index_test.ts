import { assertEquals, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

Deno.test("a registered workspace prepares with its project, and ticket_project names it", async () => {
  const kit = testKit(extension, { name: "tickets", kv: { projects: { "/workspace": "ACME" } } });
  assertEquals(await kit.prepare(), {
    ok: true,
    value: { context: "Tickets for this workspace live in project ACME." },
  });
  assertEquals(await kit.tool("ticket_project", {}), {
    ok: true,
    value: { content: [{ type: "text", text: "This workspace's tickets are in ACME." }], terminate: false },
  });
  assertEquals(await kit.close(), { ok: true, value: {} });
});

Deno.test("a workspace with no project fails the preparation, saying which", async () => {
  const kit = testKit(extension, { name: "tickets" });
  assertEquals(await kit.prepare({ workspace: "/elsewhere" }), {
    ok: false,
    error: { code: "crashed", msg: "Error: no ticket project is registered for the workspace /elsewhere" },
  });
});
