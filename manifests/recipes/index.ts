/**
 * recipes: named maintenance recipes, each a shell command. The tool's own
 * arguments name a recipe (`{"recipe": "wipe"}`), which no guard can read a
 * danger into; so before it runs a command it reports the act `shell.run`
 * with the command itself (`ctx.act`). The session's tool_call hooks are
 * asked about it — guard blocks `rm -rf` — and a blocked command never runs:
 * the tool refuses, quoting the guard. This example runs nothing for real: it
 * records each command it would run in its kv (`ran`).
 */
import { kv } from "@tether/cap";
import { ActBlocked, decodeArgs, json, outcome, refuse, v, type Tool } from "@tether/ext";

const RECIPES: Readonly<Record<string, string>> = {
  tidy: "git gc --prune=now",
  wipe: "rm -rf ./build ./dist",
};

/** The commands run so far, oldest first. */
async function ran(): Promise<string[]> {
  const value = await kv.get("ran");
  return Array.isArray(value) ? value.filter((c): c is string => typeof c === "string") : [];
}

export const tools: Record<string, Tool> = {
  run_recipe: async (args, ctx) => {
    const { recipe } = decodeArgs(v.object({ recipe: v.string() }), args);
    const command = RECIPES[recipe];
    if (command === undefined)
      return refuse(`no recipe '${recipe}'; the recipes are ${Object.keys(RECIPES).join(", ")}`);
    try {
      // run() gets the arguments the hooks left (a guard may rewrite them); it never runs if one blocks.
      const done = await ctx.act("shell.run", { command }, async (given) => {
        const { command: run } = decodeArgs(v.object({ command: v.string() }), given);
        await kv.put("ran", [...(await ran()), run]);
        return { command: run, exit: 0 };
      });
      return outcome([json({ recipe, ...done })]);
    } catch (err) {
      // Blocked before: it never ran. Withheld after: it ran, and what it gave stays here.
      if (err instanceof ActBlocked)
        return refuse(`recipe '${recipe}' ${err.phase === "before" ? "was not run" : "ran"}: ${err.message}`);
      throw err;
    }
  },
};
