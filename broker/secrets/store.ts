/**
 * Where the operator's secrets live: `<home>/secrets/<extension>.json`, mode
 * 0600 in a 0700 folder, outside the store (the ledger, backups of tether.db
 * and `tether audit` never hold a value). Written whole to a temporary file and
 * renamed; a file or folder another user could read, or one owned by another
 * user, is refused with the command that fixes it.
 *
 * No OS keyring: the broker runs on headless servers where none is unlocked
 * (no session bus, no user to type a password). `SecretSource` is the seam a
 * keyring-backed source would implement (`BrokerOptions.secrets`).
 */
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";

/** What the capabilities read: a secret's value now, or null when it is not set. */
export interface SecretSource {
  /** Throws SecretStoreError when the store cannot be trusted (its mode, owner or shape): the message names the fix. */
  get(extension: string, name: string): string | null;
}

/** The store is there but must not be read as it is. */
export class SecretStoreError extends Error {
  override readonly name = "SecretStoreError";
}

/** The longest value, and the largest file read. */
export const MAX_SECRET_BYTES = 8192;
const MAX_FILE_BYTES = 256 * 1024;
/** The shortest value: anything shorter could not be told from other text when responses are redacted. */
export const MIN_SECRET_LENGTH = 8;

const SecretsFile = v.strictObject({
  secrets: v.pipe(
    v.record(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,63}$/)), v.pipe(v.string(), v.maxLength(MAX_SECRET_BYTES))),
    v.check((r) => Object.keys(r).length <= 64, "at most 64 secrets"),
  ),
});

/** Why `value` cannot be a secret, or null. */
export function secretValueProblem(value: string): string | null {
  if (value.length < MIN_SECRET_LENGTH) return `it is shorter than ${MIN_SECRET_LENGTH} characters: too short to be a credential, and the broker could not tell it from other text when it redacts responses`;
  if (value.length > MAX_SECRET_BYTES) return `it is longer than ${MAX_SECRET_BYTES} characters`;
  if (!/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value)) return "it must be printable ASCII without line breaks or spaces at its ends (it is sent in a header or a query)";
  return null;
}

const EXTENSION = /^[a-z][a-z0-9_-]{0,63}$/;

export class FileSecrets implements SecretSource {
  readonly dir: string;

  constructor(home: string) {
    this.dir = join(home, "secrets");
  }

  file(extension: string): string {
    if (!EXTENSION.test(extension)) throw new SecretStoreError(`'${extension.slice(0, 64)}' is not an extension name`);
    return join(this.dir, `${extension}.json`);
  }

  get(extension: string, name: string): string | null {
    return this.#read(extension)[name] ?? null;
  }

  /** The names of `extension`'s secrets that are set. */
  names(extension: string): string[] {
    return Object.keys(this.#read(extension)).sort();
  }

  set(extension: string, name: string, value: string): void {
    const problem = secretValueProblem(value);
    if (problem !== null) throw new SecretStoreError(`the value of ${extension}'s secret '${name}' was refused: ${problem}`);
    this.#write(extension, { ...this.#read(extension), [name]: value });
  }

  /** True when it was set. */
  unset(extension: string, name: string): boolean {
    const secrets = this.#read(extension);
    if (!Object.hasOwn(secrets, name)) return false;
    delete secrets[name];
    this.#write(extension, secrets);
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
      mkdirSync(this.dir, { mode: 0o700 });
      st = lstatSync(this.dir);
    }
    if (!st.isDirectory()) throw new SecretStoreError(`${this.dir} is not a folder (a link is not followed); remove it and set the secrets again`);
    checkOwner(this.dir, st.uid);
    if ((st.mode & 0o077) !== 0) throw new SecretStoreError(`${this.dir} has mode ${octal(st.mode)}: other users could read the secrets in it; run: chmod 700 ${this.dir}`);
    return true;
  }

  #read(extension: string): Record<string, string> {
    const file = this.file(extension);
    if (!this.#folder(false)) return {};
    let fd: number;
    try {
      // No link is followed, and the checks below are of the file this descriptor reads.
      fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return {};
      if (code === "ELOOP") throw new SecretStoreError(`${file} is a symbolic link, which is not followed; remove it and set the secrets again`);
      throw err;
    }
    try {
      const st = fstatSync(fd);
      checkOwner(file, st.uid);
      if ((st.mode & 0o077) !== 0) throw new SecretStoreError(`${file} has mode ${octal(st.mode)}: other users could read it; run: chmod 600 ${file}`);
      if (st.size > MAX_FILE_BYTES) throw new SecretStoreError(`${file} is over ${MAX_FILE_BYTES} bytes; it is not a secrets file tether wrote`);
      const buffer = Buffer.alloc(st.size);
      let at = 0;
      while (at < st.size) {
        const n = readSync(fd, buffer, at, st.size - at, at);
        if (n === 0) break;
        at += n;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(buffer.subarray(0, at).toString("utf8"));
      } catch {
        throw new SecretStoreError(`${file} is not JSON; remove it and set the secrets again`);
      }
      const checked = v.safeParse(SecretsFile, parsed);
      if (!checked.success) throw new SecretStoreError(`${file} is not a secrets file tether wrote (${checked.issues[0].message.slice(0, 120)}); remove it and set the secrets again`);
      return { ...checked.output.secrets };
    } finally {
      closeSync(fd);
    }
  }

  #write(extension: string, secrets: Record<string, string>): void {
    const file = this.file(extension);
    this.#folder(true);
    if (Object.keys(secrets).length === 0) {
      rmSync(file, { force: true });
      return;
    }
    const tmp = `${file}.${process.pid}.tmp`;
    rmSync(tmp, { force: true });
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, `${JSON.stringify({ secrets }, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // A crash leaves the old file or the new one, never half of one.
    renameSync(tmp, file);
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
  if (me !== undefined && uid !== me) throw new SecretStoreError(`${path} is owned by uid ${uid}, not by the broker's user (uid ${me}); run: chown ${me} ${path}`);
}
