#!/usr/bin/env node
// The `tether` command. From the installed package (npm install -g, no
// tsconfig.json beside bin/): the compiled JavaScript in dist/, no TypeScript
// at run time. From a checkout: the TypeScript sources through tsx, so the
// sources are what runs (no build step to forget).
import { existsSync } from "node:fs";

const compiled = new URL("../dist/broker/cli/main.js", import.meta.url);
const checkout = existsSync(new URL("../tsconfig.json", import.meta.url));
let main;
if (!checkout && existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../broker/cli/main.ts"));
}
process.exitCode = await main(process.argv.slice(2));
