/**
 * `serve` and `serving`: what a generated entry calls. Neither returns until
 * the broker closes the channel.
 */
import { serveLoop } from "../cap/runtime.js";
import { answer, type Served } from "./answer.js";
import type { Declared } from "./hook.js";
import type { Command, Tool } from "./tool.js";

/**
 * Serves tools, hooks and commands. `hooks` rows pair the event the manifest
 * declared with the module's hook; `answer` checks they agree.
 *
 * @example
 * ```ts
 * import { outcome, serving, text } from "@tether/ext";
 * await serving({ tools: { hello: () => outcome([text("hi")]) } });
 * ```
 */
export function serving(served: {
  tools?: Readonly<Record<string, Tool>>;
  hooks?: readonly Declared[];
  commands?: Readonly<Record<string, Command>>;
}): Promise<never> {
  const table: Served = served;
  return serveLoop((asked, ctx) => answer(table, asked, ctx), {
    tools: Object.keys(served.tools ?? {}),
    hooks: (served.hooks ?? []).map(([event]) => event),
    commands: Object.keys(served.commands ?? {}),
  });
}

/**
 * Serves tools only: `serving` with an empty hook table.
 *
 * @example
 * ```ts
 * import { outcome, serve, text } from "@tether/ext";
 * await serve({ hello: () => outcome([text("hi")]) });
 * ```
 */
export function serve(tools: Readonly<Record<string, Tool>>): Promise<never> {
  return serving({ tools });
}
