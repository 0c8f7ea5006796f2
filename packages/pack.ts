/**
 * Packs the SDK for publishing: `npx tsx packages/pack.ts <out-dir>` writes
 * tether-ext-<version>.tgz and tether-cap-<version>.tgz, built from
 * jail-runtime/ with the metadata in packages/ext and packages/cap.
 * Publish both (`npm publish <tarball>`), @tether/ext first.
 */
import { packSdk } from "../broker/sdk/pack.js";

const out = process.argv[2];
if (out === undefined) {
  console.error("usage: npx tsx packages/pack.ts <out-dir>");
  process.exit(2);
}
const packed = await packSdk(out);
console.log(`${packed.ext}\n${packed.cap}`);
