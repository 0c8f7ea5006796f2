/**
 * The packages the jails that read an extension's sources are shown beside the
 * SDK (broker/install/sdk-packages.ts) are exactly the ones the SDK imports by
 * name: one missing would fail every bundle and type check in the jail, one
 * too many would show it more of the broker's node_modules/ than it needs.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { runtimeRoot } from "../../broker/install/bundle-core.js";
import { SDK_PACKAGES, sdkPackageDirs } from "../../broker/install/sdk-packages.js";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "node_modules" ? [] : sources(path);
    return /\.(ts|js|mjs)$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

test("SDK_PACKAGES is the set of bare packages jail-runtime imports (the test kit's aside)", () => {
  const named = new Set<string>();
  // The test kit (@tether/ext/testing) is for test files, which are never bundled or checked in a jail:
  // the packages it needs (the broker's egress matcher's) are not shown to the jails.
  const kit = join(runtimeRoot(), "ext", "testing");
  for (const file of sources(runtimeRoot()).filter((f) => !f.startsWith(kit))) {
    for (const m of readFileSync(file, "utf8").matchAll(
      /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["']([^"'./][^"']*)["']/g,
    )) {
      const spec = m[1]!;
      if (spec.startsWith("node:") || spec.startsWith("jsr:") || spec.startsWith("npm:") || spec.startsWith("@tether/"))
        continue;
      named.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
    }
  }
  expect([...named].sort()).toEqual([...SDK_PACKAGES].sort());
});

test("each is found as Node finds it from the SDK", () => {
  expect(sdkPackageDirs(runtimeRoot())).toHaveLength(SDK_PACKAGES.length);
});
