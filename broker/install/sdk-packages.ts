/**
 * The packages the SDK imports by name: the jails that read an extension's
 * sources (bundling, the type check) see them read-only at their real
 * paths, beside the SDK, and nothing else of the broker's `node_modules/`.
 * A test checks this list against the SDK's own imports.
 */
import { existsSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";

export const SDK_PACKAGES = ["msgpackr", "valibot"] as const;

/** Each package's real folder, found as Node finds it from the SDK (the nearest node_modules/ up). */
export function sdkPackageDirs(sdk: string): string[] {
  return SDK_PACKAGES.flatMap((name) => {
    for (let dir = sdk; ; dir = dirname(dir)) {
      const candidate = join(dir, "node_modules", name);
      if (existsSync(join(candidate, "package.json"))) return [realpathSync(candidate)];
      if (dirname(dir) === dir) return [];
    }
  });
}
