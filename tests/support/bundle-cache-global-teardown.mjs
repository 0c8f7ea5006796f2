/** Jest globalTeardown of the whole run: removes the bundle cache bundle-cache-global-setup.mjs made. */
import { rmSync } from "node:fs";

export default function globalTeardown() {
  const key = Symbol.for("tether.test.bundleCache");
  const dir = globalThis[key];
  delete globalThis[key];
  if (typeof dir === "string") rmSync(dir, { recursive: true, force: true });
}
