/**
 * The parameters schemas of the tools a plan serves, under the keys their checks compile them under:
 * what a session's open hands the broker's checker to compile while the plan's satellites boot.
 */
import { type SchemaToCompile, toolArgsKey } from "../base/tool-args.js";
import type { Plan } from "./activation.js";
import type { Known } from "./known.js";

export function planToolSchemas(pending: {
  readonly plan: Plan;
  readonly known: ReadonlyMap<string, Known>;
}): SchemaToCompile[] {
  const out: SchemaToCompile[] = [];
  for (const [tool, extension] of pending.plan.tools) {
    const installed = pending.known.get(extension)?.installed;
    const row = installed?.manifest.tool.find((t) => t.name === tool);
    if (installed != null && row !== undefined)
      out.push({ key: toolArgsKey(installed.manifestHash, tool), schema: row.parameters });
  }
  return out;
}
