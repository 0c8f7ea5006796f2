import { assertEquals, testKit } from "@tether/ext/testing";
import * as recipes from "./index.ts";

Deno.test("a recipe's command is reported as shell.run, then run", async () => {
  const kit = testKit(recipes, { name: "recipes", manifest: false, acts: { declared: ["shell.run"] } });
  const reply = await kit.tool("run_recipe", { recipe: "tidy" });
  assertEquals(reply, {
    ok: true,
    value: {
      content: [{ type: "json", json: { recipe: "tidy", command: "git gc --prune=now", exit: 0 } }],
      terminate: false,
    },
  });
  assertEquals(
    kit.acts.acts.map((a) => [a.name, a.arguments, a.ok]),
    [["shell.run", { command: "git gc --prune=now" }, true]],
  );
  assertEquals(kit.kv.value("ran"), ["git gc --prune=now"]);
});

Deno.test("a blocked command never runs, and the tool refuses with the hook's reason", async () => {
  const kit = testKit(recipes, {
    name: "recipes",
    manifest: false,
    acts: { before: { "shell.run": { block: "no rm -rf here", by: "guard" } } },
  });
  const reply = await kit.tool("run_recipe", { recipe: "wipe" });
  assertEquals(reply, {
    ok: false,
    error: { code: "refused", msg: "recipe 'wipe' was not run: Blocked by 'guard': no rm -rf here" },
  });
  assertEquals(kit.kv.value("ran"), undefined);
  assertEquals(kit.acts.acts[0]?.blockedBy, "guard");
});

Deno.test("a rewrite is what runs", async () => {
  const kit = testKit(recipes, {
    name: "recipes",
    manifest: false,
    acts: { before: () => ({ rewrite: { command: "rm -rf ./build" }, by: "guard" }) },
  });
  await kit.tool("run_recipe", { recipe: "wipe" });
  assertEquals(kit.kv.value("ran"), ["rm -rf ./build"]);
});

Deno.test("withheld output: the command ran, the tool does not hand back what it gave", async () => {
  const kit = testKit(recipes, {
    name: "recipes",
    manifest: false,
    acts: { after: { "shell.run": { withhold: "exit codes are private", by: "audit" } } },
  });
  const reply = await kit.tool("run_recipe", { recipe: "tidy" });
  assertEquals(reply, {
    ok: false,
    error: {
      code: "refused",
      msg: "recipe 'tidy' ran: The output of act 'shell.run' was withheld by 'audit': exit codes are private",
    },
  });
  assertEquals(kit.kv.value("ran"), ["git gc --prune=now"]);
});

Deno.test("an act the manifest does not declare is refused as the broker refuses it", async () => {
  const kit = testKit(recipes, { name: "recipes", manifest: false, acts: { declared: [] } });
  const reply = await kit.tool("run_recipe", { recipe: "tidy" });
  assertEquals(reply.ok, false);
  assertEquals(
    (reply as { error: { msg: string } }).error.msg.startsWith(
      "tool 'run_recipe': act.before: 'recipes' does not declare the act 'shell.run'; add [[act]]",
    ),
    true,
  );
});
