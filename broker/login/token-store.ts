/**
 * Where sign-ins are kept: `<home>/logins/<extension>.<login>.json`, mode 0600
 * in a 0700 folder, written to a temporary name and renamed (a crash never
 * leaves half a file). A file or folder that group or other may reach is
 * refused, not trusted and not silently fixed: the message says the chmod.
 *
 * Names are manifest identifiers (no dots), so `<extension>.<login>` is unambiguous.
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { LOGIN_FLOWS } from "../install/login-row.js";

const Name = v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,63}$/));
const Token = v.pipe(v.string(), v.minLength(1), v.maxLength(16_384));
const Millis = v.pipe(v.number(), v.safeInteger(), v.minValue(0));

/** One extension's one sign-in, as stored. */
export const StoredLogin = v.strictObject({
  version: v.literal(1),
  extension: Name,
  login: Name,
  flow: v.picklist(LOGIN_FLOWS),
  access_token: Token,
  token_type: v.pipe(v.string(), v.maxLength(64)),
  refresh_token: v.nullable(Token),
  /** When the access token stops working (ms since the epoch); null: the server did not say. */
  expires_at: v.nullable(Millis),
  /** The operator's sign-in; kept across refreshes. */
  signed_in_at: Millis,
  /** When the access token was issued (the sign-in, or the last refresh). */
  obtained_at: Millis,
  scope: v.nullable(v.pipe(v.string(), v.maxLength(4096))),
});
export type StoredLogin = v.InferOutput<typeof StoredLogin>;

const MAX_FILE = 64 * 1024;
const FILE = /^([a-z][a-z0-9_-]{0,63})\.([a-z][a-z0-9_-]{0,63})\.json$/;

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(3, "0");
}

function refused(message: string): TetherError {
  return new TetherError(BrokerCode.loginFailed, message);
}

export class TokenStore {
  readonly dir: string;

  constructor(home: string) {
    this.dir = join(home, "logins");
  }

  file(extension: string, login: string): string {
    return join(this.dir, `${extension}.${login}.json`);
  }

  /** The folder, made 0700 when missing; refused when looser. */
  #folder(create: boolean): boolean {
    if (create) mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    let st;
    try {
      st = lstatSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw err;
    }
    if (!st.isDirectory()) throw refused(`${this.dir} is not a folder; move it away (sign-ins are kept there)`);
    if ((st.mode & 0o077) !== 0)
      throw refused(
        `${this.dir} has mode ${octal(st.mode)}: group or other ` +
          `may reach the sign-ins in it. Run: chmod 700 ${this.dir}`,
      );
    return true;
  }

  /** The stored sign-in, or null when there is none. */
  read(extension: string, login: string): StoredLogin | null {
    if (!this.#folder(false)) return null;
    const file = this.file(extension, login);
    let st;
    try {
      st = lstatSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    if (!st.isFile())
      throw refused(`${file} is not a regular file; remove it and sign in again: tether login ${extension} ${login}`);
    if ((st.mode & 0o077) !== 0)
      throw refused(
        `${file} has mode ${octal(st.mode)}: group or other may read or write ` +
          `it. Run: chmod 600 ${file} (or tether logout ${extension} ${login})`,
      );
    if (typeof process.getuid === "function" && st.uid !== process.getuid())
      throw refused(`${file} belongs to another user (uid ${st.uid}); remove it and sign in again`);
    if (st.size > MAX_FILE)
      throw refused(
        `${file} is larger than ${MAX_FILE / 1024} KiB: not a sign-in this broker wrote; remove it and sign in again`,
      );
    let parsed;
    try {
      parsed = v.safeParse(StoredLogin, parseBoundedJson(readFileSync(file, "utf8"), { maxDepth: 4, maxElements: 64 }));
    } catch {
      parsed = null;
    }
    if (parsed === null || !parsed.success || parsed.output.extension !== extension || parsed.output.login !== login) {
      throw refused(
        `${file} is not a sign-in this broker wrote (damaged?); remove ` +
          `it and sign in again: tether login ${extension} ${login}`,
      );
    }
    return parsed.output;
  }

  /** Replaces the stored sign-in, atomically. */
  write(stored: StoredLogin): void {
    this.#folder(true);
    const file = this.file(stored.extension, stored.login);
    const scratch = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    const fd = openSync(scratch, "wx", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(v.parse(StoredLogin, stored), null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(scratch, file);
    } catch (err) {
      rmSync(scratch, { force: true });
      throw err;
    }
  }

  /** Deletes the stored sign-in; whether there was one. */
  remove(extension: string, login: string): boolean {
    const file = this.file(extension, login);
    try {
      lstatSync(file);
    } catch {
      return false;
    }
    rmSync(file, { force: true });
    return true;
  }

  /** Every stored sign-in's names, by file name (not read). */
  list(): Array<{ extension: string; login: string }> {
    if (!this.#folder(false)) return [];
    return readdirSync(this.dir)
      .map((name) => FILE.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ extension: m[1]!, login: m[2]! }))
      .sort((a, b) =>
        a.extension === b.extension ? a.login.localeCompare(b.login) : a.extension.localeCompare(b.extension),
      );
  }
}
