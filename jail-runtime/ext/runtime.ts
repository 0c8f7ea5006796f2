/**
 * `serve` and `serving`: what a generated entry calls, once the extension's
 * module has loaded (the prelude booted before it). Neither returns until the
 * broker closes the channel.
 */
import { arrayMap, objectKeys } from "../cap/intrinsics.js";
import { serveLoop } from "../cap/runtime.js";
import { answer, type Served } from "./answer.js";
import type { Declared } from "./hook.js";
import { kindNames, type ServedKinds } from "./kinds.js";
import { sessionNames, type SessionServed } from "./session.js";
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
export function serving(
  served: {
    tools?: Readonly<Record<string, Tool>>;
    hooks?: readonly Declared[];
    commands?: Readonly<Record<string, Command>>;
    /** Kinds added beside the built-ins: per kind, its handlers by name (./kinds.ts). */
    kinds?: ServedKinds;
  } & SessionServed,
): Promise<never> {
  const table: Served = served;
  // Captured built-ins (see cap/intrinsics.ts): this runs after the extension's module did.
  return serveLoop((asked, ctx) => answer(table, asked, ctx), {
    tools: objectKeys(served.tools ?? {}),
    hooks: arrayMap(served.hooks ?? [], (row) => row[0]),
    commands: objectKeys(served.commands ?? {}),
    ...sessionNames(served),
    kinds: kindNames(served.kinds),
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
