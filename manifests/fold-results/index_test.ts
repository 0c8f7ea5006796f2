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
    error: {
      code: "unknown_tool",
      msg: "No compaction strategy 'nope'; this extension serves [fold-tool-results, summarise-with-model]",
    },
  });
});

Deno.test("summarise-with-model: all but the last four messages fold into the model's summary", async () => {
  const kit = testKit(extension, {
    name: "fold-results",
    model: { answer: "The user asked why the build fails; ls and cat ran.", maxTokensPerCall: 512 },
  });
  const messages = [user("a"), result("ls", "x"), result("cat", "yy"), user("b"), user("c"), user("d"), user("e")];
  const reply = await kit.compact("summarise-with-model", { messages, budget: 400 });
  assertEquals(reply, {
    ok: true,
    value: {
      summary: "The user asked why the build fails; ls and cat ran.",
      folds: [{ from: 0, to: 2, text: "The user asked why the build fails; ls and cat ran." }],
    },
  });
  assertEquals(kit.model.requests.length, 1);
  assertEquals(kit.model.requests[0]!.model, "gpt-4o-mini");
  assertEquals(kit.model.requests[0]!.messages[1]!.content, "user: a\ntool ls: x\ntool cat: yy");
});

Deno.test("summarise-with-model: a refused model call fails the strategy, naming the rule", async () => {
  const kit = testKit(extension, {
    name: "fold-results",
    model: { answer: { refuse: "session.run_active", reason: "a run is active" } },
  });
  const messages = [user("a"), user("b"), user("c"), user("d"), user("e")];
  const reply = await kit.compact("summarise-with-model", { messages, budget: 400 });
  assertEquals(reply.ok, false);
  assertEquals(!reply.ok && reply.error.msg.includes("(rule: session.run_active)"), true);
});
