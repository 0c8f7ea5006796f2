import { assertEquals, testKit } from "@tether/ext/testing";

Deno.test("the module throws while loading: no host ever injects FLAKY_CONFIG", async () => {
  let thrown = "";
  try {
    await import("./index.ts");
  } catch (err) {
    thrown = (err as Error).message;
  }
  assertEquals(thrown, "missing configuration: FLAKY_CONFIG.feedUrl is not set");
});

Deno.test("given the configuration it expects, feed_items answers the feed", async () => {
  (globalThis as { FLAKY_CONFIG?: { feedUrl: string } }).FLAKY_CONFIG = { feedUrl: "https://feed.example/rss" };
  try {
    // A fresh module instance: the first import's failure is cached under the plain specifier.
    const flaky = await import("./index.ts?configured");
    const reply = await testKit(flaky, { name: "flaky" }).tool("feed_items");
    assertEquals(reply, {
      ok: true,
      value: { content: [{ type: "json", json: { feed: "https://feed.example/rss", items: [] } }], terminate: false },
    });
  } finally {
    delete (globalThis as { FLAKY_CONFIG?: unknown }).FLAKY_CONFIG;
  }
});
