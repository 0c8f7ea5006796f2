/**
 * Test support: one operator key for a test file's fleet, written into each
 * home before its broker opens — the signing key and the trusted-keys line —
 * as an operator does with `tether key create` on one host and `tether key
 * trust` on the others (docs/fleet.md#operator-keys).
 */
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const PEM = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
/** The test operator's public key, as trusted-keys holds it. */
export const TEST_OPERATOR_KEY = `ed25519:${(publicKey.export({ format: "jwk" }) as { x: string }).x}`;

/** Makes `home` sign with, and trust, the test operator's key (unless it has keys of its own). */
export function provisionOperatorKey(home: string): string {
  mkdirSync(home, { recursive: true });
  if (!existsSync(join(home, "operator.key"))) writeFileSync(join(home, "operator.key"), PEM, { mode: 0o600 });
  if (!existsSync(join(home, "trusted-keys")))
    writeFileSync(join(home, "trusted-keys"), `${TEST_OPERATOR_KEY} test-operator\n`, { mode: 0o600 });
  return home;
}
