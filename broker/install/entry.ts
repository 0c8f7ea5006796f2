/**
 * The generated entry: the module every artifact is bundled from. Its import
 * order is the satellite's boot order, and esbuild keeps it in the one ESM
 * file it writes, top-level await included:
 *
 * 1. the prelude (`jail-runtime/cap/prelude.ts`): captures the built-ins and
 *    Deno calls the runtime uses, reads the boot token, connects, revokes the
 *    socket grants and checks they are gone. Its top-level await holds back
 *    everything below until then;
 * 2. the SDK (`@tether/ext`);
 * 3. the extension's own module: its top-level code is the first extension
 *    code to run, with no grant left to keep;
 * 4. `serving(...)`: hello over the prelude's channel, then calls. A module
 *    that throws at top level never gets here, and the boot fails.
 */
import type { Manifest } from "./manifest.js";

/** What the entry imports first. Resolved for the generated entry alone (no extension file can import it). */
export const PRELUDE_SPECIFIER = "@tether/prelude";
/** The prelude, relative to the SDK root (jail-runtime/). */
export const PRELUDE_PATH = "cap/prelude.ts";

/** The entry's source: pairs each hook the manifest declares with the module's hook of that name. */
export function generatedEntry(entryPath: string, manifest: Manifest): string {
  const declared = JSON.stringify(manifest.hook.map((h) => h.event));
  return [
    `import ${JSON.stringify(PRELUDE_SPECIFIER)};`,
    `import { serving } from "@tether/ext";`,
    `import * as m from ${JSON.stringify(entryPath)};`,
    `const hooks = m.hooks ?? {};`,
    `const declared = ${declared};`,
    `const rows = declared.filter((e) => Object.hasOwn(hooks, e)).map((e) => [e, hooks[e]]);`,
    `for (const e of Object.keys(hooks)) if (!declared.includes(e)) rows.push([e, hooks[e]]);`,
    `await serving({ tools: m.tools ?? {}, commands: m.commands ?? {}, hooks: rows, ` +
      `contexts: m.contexts, routes: m.routes, compactions: m.compactions, managed: m.managed, ` +
      `observe: m.observe, providers: m.providers, services: m.services, init: m.init, search: m.search, ` +
      `kinds: m.kinds });`,
    ``,
  ].join("\n");
}
