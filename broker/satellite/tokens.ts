/** Unguessable tokens and their constant-time comparison. */
import { createHash, randomFillSync, timingSafeEqual } from "node:crypto";

const TOKEN_BYTES = 24;
// One randomFillSync per 256 tokens: minting sits on every invocation's path,
// and a call to the CSPRNG per token cost 6–13 µs (bench/invoke).
const pool = Buffer.alloc(TOKEN_BYTES * 256);
let used = pool.length;

/** A fresh 192-bit token, URL-safe text. */
export function mintToken(): string {
  if (used + TOKEN_BYTES > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const token = pool.toString("base64url", used, used + TOKEN_BYTES);
  // Zero what was handed out, so no token's bytes linger in the pool.
  pool.fill(0, used, used + TOKEN_BYTES);
  used += TOKEN_BYTES;
  return token;
}

/** Compares two tokens in time independent of where they differ (and of their lengths). */
export function tokensEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
