/** Unguessable tokens and their constant-time comparison. */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** A fresh 192-bit token, URL-safe text. */
export function mintToken(): string {
  return randomBytes(24).toString("base64url");
}

/** Compares two tokens in time independent of where they differ (and of their lengths). */
export function tokensEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
