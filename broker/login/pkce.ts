/**
 * RFC 7636 (PKCE, S256) and the `state` of an authorization request: fresh
 * random values per sign-in, base64url without padding, and a comparison that
 * takes the same time wherever the strings differ.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export interface Pkce {
  /** 43 characters from 32 random bytes (RFC 7636 §4.1 asks for 43-128). */
  readonly verifier: string;
  /** BASE64URL(SHA256(verifier)). */
  readonly challenge: string;
  readonly method: "S256";
}

export function challengeOf(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

export function newPkce(): Pkce {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: challengeOf(verifier), method: "S256" };
}

/** The `state` that ties a redirect to the request this broker made. */
export function newState(): string {
  return randomBytes(24).toString("base64url");
}

/** Constant-time equality of two strings (hashed first, so lengths leak nothing either). */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();
  return timingSafeEqual(digest(a), digest(b));
}
