/**
 * Where the operator's secrets live: `<home>/secrets/<extension>.<name>`, one
 * file per secret holding its value, mode 0600 in a 0700 folder, outside the
 * store (the ledger, backups of tether.db and `tether audit` never hold a
 * value). One file each, so two `tether secret set` at once never lose one
 * another's value; each is written whole to a temporary file and renamed. A
 * file or folder another user could read, or one owned by another user, is
 * refused with the command that fixes it.
 *
 * No OS keyring: the broker runs on headless servers where none is unlocked
 * (no session bus, no user to type a password). `SecretSource` is the seam a
 * keyring-backed source would implement (`BrokerOptions.secrets`).
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { readAtMost } from "../base/read-at-most.js";
import { join } from "node:path";

/** What the capabilities read: a secret's value now, or null when it is not set. */
export interface SecretSource {
  /** Throws SecretStoreError when the store cannot be trusted (its mode, owner or shape): the message names the fix. */
  get(extension: string, name: string): string | null;
}

/** The secrets a sign-in fills (`[[login]] secret`): the broker's logins answer them, never the operator's store. */
export interface LoginSecrets {
  /** Whether `name` of `extension` is filled by one of its approved `[[login]]` rows. */
  fills(extension: string, name: string): boolean;
  /** Its access token now (refreshed first when due), or null: not signed in, expired, not approved. */
  currentToken(extension: string, name: string): Promise<string | null>;
}

/** The store is there but must not be read as it is. */
export class SecretStoreError extends Error {
  override readonly name = "SecretStoreError";
}

/** The longest value (and the largest file read). */
export const MAX_SECRET_BYTES = 8192;
/** The shortest value: anything shorter could not be told from other text when responses are redacted. */
export const MIN_SECRET_LENGTH = 8;

/** Why `value` cannot be a secret, or null. */
export function secretValueProblem(value: string): string | null {
  if (value.length < MIN_SECRET_LENGTH)
    return (
      `it is shorter than ${MIN_SECRET_LENGTH} characters: too short to be a credential, ` +
      `and the broker could not tell it from other text when it redacts responses`
    );
  if (value.length > MAX_SECRET_BYTES) return `it is longer than ${MAX_SECRET_BYTES} characters`;
  if (!/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value))
    return "it must be printable ASCII without line breaks or spaces at its ends (it is sent in a header or a query)";
  return null;
}

const NAME = /^[a-z][a-z0-9_-]{0,63}$/;

export class FileSecrets implements SecretSource {
  readonly dir: string;

  constructor(home: string) {
    this.dir = join(home, "secrets");
  }

  /** The file of `extension`'s secret `name` (names hold no `.`: the first one separates them). */
  file(extension: string, name: string): string {
    if (!NAME.test(extension)) throw new SecretStoreError(`'${extension.slice(0, 64)}' is not an extension name`);
    if (!NAME.test(name)) throw new SecretStoreError(`'${name.slice(0, 64)}' is not a secret's name`);
    return join(this.dir, `${extension}.${name}`);
  }

  get(extension: string, name: string): string | null {
    const file = this.file(extension, name);
    return this.#folder(false) ? this.#read(file) : null;
  }

  /** The names of `extension`'s secrets that are set. */
  names(extension: string): string[] {
    this.file(extension, "x");
    if (!this.#folder(false)) return [];
    const prefix = `${extension}.`;
    return readdirSync(this.dir)
      .filter((f) => f.startsWith(prefix) && NAME.test(f.slice(prefix.length)))
      .map((f) => f.slice(prefix.length))
      .filter((name) => this.get(extension, name) !== null)
      .sort();
  }

  set(extension: string, name: string, value: string): void {
    const file = this.file(extension, name);
    const problem = secretValueProblem(value);
    if (problem !== null)
      throw new SecretStoreError(`the value of ${extension}'s secret '${name}' was refused: ${problem}`);
    this.#folder(true);
    this.#write(file, value);
  }

  /** True when it was set. */
  unset(extension: string, name: string): boolean {
    const file = this.file(extension, name);
    if (this.get(extension, name) === null) return false;
    rmSync(file, { force: true });
    this.#syncFolder();
    return true;
  }

  /** The folder, made 0700 if absent; refused when another user could read it. */
  #folder(create: boolean): boolean {
    let st;
    try {
      st = lstatSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      if (!create) return false;
      try {
        mkdirSync(this.dir, { mode: 0o700 });
      } catch (made) {
        // Another process (a second `tether secret set`) made it meanwhile: it is checked below like any folder found.
        if ((made as NodeJS.ErrnoException).code !== "EEXIST") throw made;
      }
      st = lstatSync(this.dir);
    }
    if (!st.isDirectory())
      throw new SecretStoreError(
        `${this.dir} is not a folder (a link is not followed); remove it and set the secrets again`,
      );
    checkOwner(this.dir, st.uid);
    if ((st.mode & 0o077) !== 0)
      throw new SecretStoreError(
        `${this.dir} has mode ${octal(st.mode)}: other users could read the secrets in it; run: chmod 700 ${this.dir}`,
      );
    return true;
  }

  /** The value in `file`, null when there is none; checked on the descriptor it is read from. */
  #read(file: string): string | null {
    let fd: number;
    try {
      // No link is followed, and the checks below are of the file this descriptor reads.
      fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return null;
      if (code === "ELOOP")
        throw new SecretStoreError(
          `${file} is a symbolic link, which is not followed; remove it and set the secret again`,
        );
      throw err;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new SecretStoreError(`${file} is not a file; remove it and set the secret again`);
      checkOwner(file, st.uid);
      if ((st.mode & 0o077) !== 0)
        throw new SecretStoreError(
          `${file} has mode ${octal(st.mode)}: other users could read it; run: chmod 600 ${file}`,
        );
      if (st.size > MAX_SECRET_BYTES)
        throw new SecretStoreError(`${file} is over ${MAX_SECRET_BYTES} bytes; it is not a secret tether wrote`);
      return readAtMost(fd, st.size).toString("utf8");
    } finally {
      closeSync(fd);
    }
  }

  #write(file: string, value: string): void {
    const tmp = `${file}.${process.pid}-${randomBytes(4).toString("hex")}.tmp`;
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, value);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // A crash leaves the old value or the new one, never half of one.
    renameSync(tmp, file);
    this.#syncFolder();
  }

  #syncFolder(): void {
    const dirFd = openSync(this.dir, constants.O_RDONLY);
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }
}

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

function checkOwner(path: string, uid: number): void {
  const me = process.getuid?.();
  if (me !== undefined && uid !== me)
    throw new SecretStoreError(
      `${path} is owned by uid ${uid}, not by the broker's user (uid ${me}); run: chown ${me} ${path}`,
    );
}
