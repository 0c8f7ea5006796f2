#!/usr/bin/env node
// The `tether` command. From the installed package (npm install -g, no
// tsconfig.json beside bin/): the compiled JavaScript in dist/, no TypeScript
// at run time. From a checkout: the TypeScript sources through tsx, so the
// sources are what runs (no build step to forget) — unless TETHER_FROM_DIST=1
// says dist/ was just built from them (`make test` does: its hundreds of
// spawns then skip tsx's start-up).
import { existsSync } from "node:fs";

// dist/cli/ is the compiled command bundled into a few files (scripts/bundle-cli.mjs): it
// starts in about half the time of dist/broker/'s ~500 modules.
const compiled = new URL("../dist/cli/main.js", import.meta.url);
const checkout = existsSync(new URL("../tsconfig.json", import.meta.url));
const fromDist = process.env.TETHER_FROM_DIST === "1";
if (fromDist && !existsSync(compiled)) {
  process.stderr.write("TETHER_FROM_DIST=1 but dist/ is not built: run 'npm run build' (or unset it)\n");
  process.exit(2);
}
let main;
if ((!checkout || fromDist) && existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../broker/cli/main.ts"));
}
process.exitCode = await main(process.argv.slice(2));
