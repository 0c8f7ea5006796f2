#!/usr/bin/env node
// An extension's database process (broker/store/db-child.ts), started by the
// broker: loads the TypeScript sources through tsx, as bin/tether.js does.
import { register } from "tsx/esm/api";

register();
await import("../broker/store/db-child.ts");
