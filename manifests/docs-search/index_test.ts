import { assertEquals, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

Deno.test("research asks the session's providers through the search capability", async () => {
  const kit = testKit(extension, {
    name: "docs-search",
    search: {
      providers: {
        web: () => [{ title: "Deno permissions", url: "https://docs.example/deno/permissions" }],
        archive: () => [{ title: "Deno permissions (archived)", url: "https://docs.example/deno/permissions" }],
      },
    },
  });
  const answer = await kit.tool("research", { question: "deno" });
  assertEquals(answer, {
    ok: true,
    value: {
      content: [{ type: "text", text: "- Deno permissions [web] https://docs.example/deno/permissions" }],
      terminate: false,
    },
  });
  assertEquals(kit.search.queries, [{ query: "deno", limit: 4 }]);
});

Deno.test("its own notes provider answers a query", async () => {
  const kit = testKit(extension);
  const answer = await kit.searchProvider("notes", "release", { limit: 5 });
  assertEquals(answer, {
    ok: true,
    value: { results: [{ title: "Release checklist", snippet: "run make demo before tagging" }] },
  });
});

Deno.test("without [capabilities] search the capability is refused", async () => {
  const kit = testKit(extension, { name: "docs-search", search: { declared: false } });
  const answer = await kit.tool("research", { question: "deno" });
  assertEquals(answer.ok, false);
});

Deno.test("the sources route answers the providers it was handed, in order", async () => {
  const kit = testKit(extension);
  const answer = await kit.route("sources", "");
  assertEquals(answer, { ok: true, value: { response: "[]" } });
});
