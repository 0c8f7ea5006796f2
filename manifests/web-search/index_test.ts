import { assertEquals, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

Deno.test("web answers the pages matching every word, best title match first, at most limit", async () => {
  const kit = testKit(extension, { name: "web-search" });
  const answer = await kit.searchProvider("web", "deno permissions", { limit: 2 });
  assertEquals(answer, {
    ok: true,
    value: {
      results: [
        {
          title: "Deno permissions",
          url: "https://docs.example/deno/permissions",
          snippet: "--allow-net and friends",
          score: 2,
        },
      ],
    },
  });
});

Deno.test("archive answers the same pages, marked stale", async () => {
  const kit = testKit(extension, { name: "web-search" });
  const answer = await kit.searchProvider("archive", "bubblewrap");
  assertEquals(answer.ok && (answer.value as { results: { title: string }[] }).results.map((r) => r.title), [
    "Bubblewrap sandboxing (archived 2019)",
  ]);
});
