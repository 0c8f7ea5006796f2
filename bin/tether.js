#!/usr/bin/env node
// The `tether` command: loads the TypeScript CLI through tsx, so the sources are
// what runs (no build step to forget).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../broker/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
