import { assertEquals, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

const user = (text: string) => ({ role: "user", content: text });
const result = (name: string, text: string) => ({ role: "tool", name, content: text });

Deno.test("runs of old tool results fold into one line each; the last four messages stay", async () => {
  const kit = testKit(extension, { name: "fold-results" });
  const messages = [
    user("a"),
    result("ls", "x"),
    result("cat", "yy"),
    user("b"),
    result("ls", "z"),
    user("c"),
    result("ls", "w"),
    user("d"),
    user("e"),
  ];
  const reply = await kit.compact("fold-tool-results", { messages, hook_text: ["the open question about b"] });
  assertEquals(reply, {
    ok: true,
    value: {
      summary: "Folded 3 of 9 messages (tool results) in 2 places. Kept as asked: the open question about b",
      folds: [
        { from: 1, to: 2, text: "2 tool results from ls, cat (7 characters) folded" },
        { from: 4, to: 4, text: "1 tool result from ls (3 characters) folded" },
      ],
    },
  });
});

Deno.test("nothing to fold: no folds, and the summary says so", async () => {
  const kit = testKit(extension, { name: "fold-results" });
  const reply = await kit.compact("fold-tool-results", { messages: [user("a"), user("b")] });
  assertEquals(reply, {
    ok: true,
    value: { summary: "Folded 0 of 2 messages (tool results) in 0 places.", folds: [] },
  });
});

Deno.test("a strategy this extension does not serve is named in the answer", async () => {
  const kit = testKit(extension, { name: "fold-results" });
  const reply = await kit.compact("nope", { messages: [] });
  assertEquals(reply, {
    ok: false,
    error: { code: "unknown_tool", msg: "No compaction strategy 'nope'; this extension serves [fold-tool-results]" },
  });
});
