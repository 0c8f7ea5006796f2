/**
 * The bearer token `tether serve` asks every client for: 32 random bytes (hex)
 * in a file only its owner may read, created on first run. A file that group or
 * other can read or write is refused rather than trusted or silently fixed.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Why the token file cannot be used; the message says what to run. */
export class TokenFileError extends Error {}

export interface LoadedToken {
  readonly token: string;
  /** Whether this run created the file. */
  readonly created: boolean;
}

const MIN_LENGTH = 32;

/** Reads the token file, or creates it (mode 0600) with a fresh token. */
export function loadOrCreateToken(file: string): LoadedToken {
  let mode: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw new TokenFileError(`The token file ${file} is not a regular file`);
    mode = st.mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    const token = randomBytes(32).toString("hex");
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    try {
      // `wx`: never replace a file another process created meanwhile.
      writeFileSync(file, `${token}\n`, { mode: 0o600, flag: "wx" });
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code === "EEXIST") return loadOrCreateToken(file);
      throw raced;
    }
    return { token, created: true };
  }
  if ((mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(3, "0");
    throw new TokenFileError(
      `The token file ${file} has mode ${octal}: group or other may read or write it. ` +
        `Run: chmod 600 ${file} (or remove it; a new token is made on the next start)`,
    );
  }
  const token = readFileSync(file, "utf8").trim();
  if (token.length < MIN_LENGTH || /\s/.test(token)) {
    throw new TokenFileError(
      `The token file ${file} must hold one token of at least ${MIN_LENGTH} ` +
        `characters and no spaces; remove it and a new one is made on the next start`,
    );
  }
  return { token, created: false };
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Whether `given` is the token, compared in constant time (both sides hashed first). */
export function tokenMatches(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * Whether an `Authorization` header carries the token. Both sides are hashed
 * first, so the comparison takes the same time whatever the length or the
 * first differing byte.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  const given = match?.[1] ?? "";
  const equal = tokenMatches(given, token);
  return match !== null && equal;
}
