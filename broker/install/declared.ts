/**
 * What a manifest declares its module serves, as the boot handshake and the
 * dry boot compare it with a satellite's hello: one reading of the manifest
 * for both.
 */
import type { Declared } from "../satellite/handshake.js";
import type { Manifest } from "./manifest.js";

export function declaredOf(manifest: Manifest): Declared {
  const handles: Array<"prepare" | "observe" | "init"> = [];
  if (manifest.managed !== undefined) handles.push("prepare");
  if (manifest.observe !== undefined) handles.push("observe");
  if (manifest.init !== undefined) handles.push("init");
  return {
    tools: manifest.tool.map((t) => t.name),
    hooks: manifest.hook.map((h) => h.event),
    commands: manifest.command.map((c) => c.name),
    contexts: manifest.context.map((c) => c.name),
    routes: manifest.route.map((r) => r.name),
    compactions: manifest.compaction.map((c) => c.name),
    providers: manifest.provider.map((p) => p.name),
    services: manifest.service.map((s) => s.name),
    searches: manifest.search.map((r) => r.name),
    handles,
    kinds: Object.fromEntries(
      Object.entries(manifest.kinds ?? {}).map(([kind, k]) => [kind, k.rows.map((r) => r.name)]),
    ),
    entry: manifest.entry,
  };
}
