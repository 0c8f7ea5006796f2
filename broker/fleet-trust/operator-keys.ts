/**
 * Operator keys (docs/fleet.md#operator-keys): an Ed25519 key pair an operator
 * signs approvals and revocations with, and the public keys a host trusts.
 * Both live in the host's home, never in the fleet's database: whoever can
 * write the database cannot add a key, so cannot approve.
 *
 *   <home>/operator.key    this home's signing key (PKCS#8 PEM, mode 0600), if it has one
 *   <home>/trusted-keys    one trusted public key per line: `ed25519:<base64url> <label>`
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  createHash,
  type KeyObject,
} from "node:crypto";
import { chmodSync, existsSync, lstatSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SIGNING_KEY_FILE = "operator.key";
export const TRUSTED_KEYS_FILE = "trusted-keys";
/** More would be a mistake, not a fleet: the file is read before every pull. */
const MAX_TRUSTED = 256;
const MAX_KEYS_FILE_BYTES = 64 * 1024;
const PUBLIC = /^ed25519:([A-Za-z0-9_-]{43})$/;
const LABEL = /^[\x21-\x7e]{1,64}$/;

/** Why a key file or a key is not usable; the message says what to change. */
export class OperatorKeyError extends Error {}

export interface TrustedKey {
  /** `ed25519:<base64url of the 32-byte public key>`. */
  readonly key: string;
  /** The first 16 hex digits of the raw key's SHA-256: what a signature names. */
  readonly id: string;
  readonly label: string;
  readonly object: KeyObject;
}

export interface SigningKey {
  readonly id: string;
  readonly key: string;
  sign(bytes: Buffer): string;
}

const rawOf = (object: KeyObject): Buffer =>
  Buffer.from((object.export({ format: "jwk" }) as { x: string }).x, "base64url");
export const keyIdOf = (raw: Buffer): string => createHash("sha256").update(raw).digest("hex").slice(0, 16);
const publicText = (object: KeyObject): string => `ed25519:${rawOf(object).toString("base64url")}`;

/** Parses `ed25519:<base64url>` into a key, or says what is wrong with it. */
export function parsePublicKey(text: string): { key: string; id: string; object: KeyObject } {
  const m = PUBLIC.exec(text.trim());
  if (m === null)
    throw new OperatorKeyError(
      `'${text.slice(0, 80)}' is not a public key: it looks like ` +
        `ed25519:<43 base64url characters> (tether key list prints this home's)`,
    );
  const raw = Buffer.from(m[1]!, "base64url");
  if (raw.length !== 32) throw new OperatorKeyError(`'${text.slice(0, 80)}' is not 32 bytes of Ed25519 public key`);
  const object = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  return { key: `ed25519:${m[1]}`, id: keyIdOf(raw), object };
}

/** A regular file of ours, or null when it does not exist. */
function readOwnFile(path: string, max: number): string | null {
  let st;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  if (!st.isFile()) throw new OperatorKeyError(`${path} is not a regular file; remove it`);
  if (st.size > max) throw new OperatorKeyError(`${path} is over ${max} bytes; it is not a key file`);
  return readFileSync(path, "utf8");
}

/** The public keys this home trusts. */
export function trustedKeys(home: string): TrustedKey[] {
  const path = join(home, TRUSTED_KEYS_FILE);
  const text = readOwnFile(path, MAX_KEYS_FILE_BYTES);
  if (text === null) return [];
  const keys: TrustedKey[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const [key = "", label = "", ...rest] = trimmed.split(/\s+/);
    if (rest.length > 0 || (label !== "" && !LABEL.test(label)))
      throw new OperatorKeyError(`${path}:${i + 1}: a line is '<public key> [label]'`);
    try {
      keys.push({ ...parsePublicKey(key), label });
    } catch (err) {
      throw new OperatorKeyError(`${path}:${i + 1}: ${(err as Error).message}`);
    }
    if (keys.length > MAX_TRUSTED) throw new OperatorKeyError(`${path} trusts more than ${MAX_TRUSTED} keys`);
  }
  return keys;
}

function writeTrusted(home: string, keys: readonly Pick<TrustedKey, "key" | "label">[]): void {
  const path = join(home, TRUSTED_KEYS_FILE);
  const text =
    `# Operator keys whose signatures this host accepts (tether key trust / untrust; ` +
    `docs/fleet.md#operator-keys)\n${keys.map((k) => `${k.key}${k.label !== "" ? ` ${k.label}` : ""}\n`).join("")}`;
  writeFileSync(`${path}.tmp`, text, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

/** Adds `key` to the trusted keys (a key already there keeps its place; its label is updated). */
export function trustKey(home: string, key: string, label = ""): TrustedKey {
  if (label !== "" && !LABEL.test(label))
    throw new OperatorKeyError(
      `a key's label is 1-64 printable characters without spaces, not '${label.slice(0, 80)}'`,
    );
  const parsed = parsePublicKey(key);
  const keys = trustedKeys(home);
  const entry = { ...parsed, label };
  const at = keys.findIndex((k) => k.key === parsed.key);
  if (at < 0) keys.push(entry);
  else keys[at] = entry;
  writeTrusted(home, keys);
  return entry;
}

/** Removes a trusted key, named by its text or its id; false when it was not trusted. */
export function untrustKey(home: string, keyOrId: string): boolean {
  const keys = trustedKeys(home);
  const kept = keys.filter((k) => k.key !== keyOrId.trim() && k.id !== keyOrId.trim());
  if (kept.length === keys.length) return false;
  writeTrusted(home, kept);
  return true;
}

/** This home's signing key, or null when it has none. */
export function signingKey(home: string): SigningKey | null {
  const path = join(home, SIGNING_KEY_FILE);
  const text = readOwnFile(path, MAX_KEYS_FILE_BYTES);
  if (text === null) return null;
  const mode = lstatSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0)
    throw new OperatorKeyError(
      `The signing key ${path} has mode ${mode.toString(8)}; only its owner may read it: chmod 600 ${path}`,
    );
  let object: KeyObject;
  try {
    object = createPrivateKey(text);
  } catch {
    throw new OperatorKeyError(`${path} is not a PEM private key`);
  }
  if (object.asymmetricKeyType !== "ed25519")
    throw new OperatorKeyError(
      `${path} is a ${object.asymmetricKeyType ?? "unknown"} key; operator keys are Ed25519 (tether key create)`,
    );
  const pub = createPublicKey(object);
  const id = keyIdOf(rawOf(pub));
  return { id, key: publicText(pub), sign: (bytes) => `${id}:${sign(null, bytes, object).toString("base64url")}` };
}

/**
 * Makes a new signing key for this home, trusted here too. `replace` is for a
 * rotation: the old key file is kept as `operator.key.<its id>` (the old public
 * key stays trusted until `tether key untrust`).
 */
export function createSigningKey(
  home: string,
  label: string,
  options: { replace?: boolean } = {},
): { created: SigningKey; replaced: SigningKey | null } {
  const path = join(home, SIGNING_KEY_FILE);
  const old = signingKey(home);
  if (old !== null && options.replace !== true)
    throw new OperatorKeyError(`This home already has a signing key (${old.id}); tether key rotate makes a new one`);
  const { privateKey } = generateKeyPairSync("ed25519");
  const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  if (old !== null) renameSync(path, `${path}.${old.id}`);
  writeFileSync(`${path}.tmp`, pem, { mode: 0o600 });
  chmodSync(`${path}.tmp`, 0o600);
  renameSync(`${path}.tmp`, path);
  const created = signingKey(home)!;
  trustKey(home, created.key, label);
  return { created, replaced: old };
}

/** Whether `signature` (`<key id>:<base64url>`) is a trusted key's over `bytes`; the key when it is. */
export function verifiedBy(keys: readonly TrustedKey[], bytes: Buffer, signature: string | null): TrustedKey | null {
  if (signature === null) return null;
  // One spelling per signature: 16 hex digits, a colon, the 64 bytes in canonical unpadded base64url
  // (Node's decoder skips '=' and stray characters and ignores the last character's spare bits).
  const m = /^([0-9a-f]{16}):([A-Za-z0-9_-]{86})$/.exec(signature);
  if (m === null) return null;
  const raw = Buffer.from(m[2]!, "base64url");
  if (raw.length !== 64 || raw.toString("base64url") !== m[2]) return null;
  const key = keys.find((k) => k.id === m[1]);
  if (key === undefined) return null;
  try {
    return verify(null, bytes, key.object, raw) ? key : null;
  } catch {
    return null;
  }
}

/** Whether a signing key file is present (without reading it). */
export const hasSigningKey = (home: string): boolean => existsSync(join(home, SIGNING_KEY_FILE));
