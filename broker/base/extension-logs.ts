/**
 * Each extension's log file, `<home>/logs/<name>.log`: what its satellites
 * wrote to stderr and stdout, its `log` capability's lines, and what the
 * broker logged about it (a boot that failed, a bound that stopped it, a
 * revocation), at every level whatever `TETHER_LOG` says. `tether logs` reads
 * it.
 *
 * Bounded: when a line would take the file past `maxBytes` (1 MiB), the file
 * becomes `<name>.log.1` (replacing the one before) and a new one is started,
 * so an extension keeps at most twice that on disk. Its satellites' output is
 * bounded before it gets here too (64 KiB per stream per satellite,
 * broker/satellite/output.ts). Brokers in several processes may append to one
 * file: each line is one `write` in append mode.
 *
 * What an extension wrote is untrusted: control characters (a terminal's
 * escape sequences, a carriage return that would hide a line) are written as
 * `\u001b`, so `tether logs` prints only what is there.
 */
import { appendFileSync, mkdirSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger, LogFields, LogLevel } from "./log.js";

/** The largest a log file grows before it is rotated. */
export const EXTENSION_LOG_BYTES = 1024 * 1024;

/** The names a log file may have: an extension's (`[a-z][a-z0-9_-]{0,63}`). */
const NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** `<home>/logs`. */
export function extensionLogDir(home: string): string {
  return join(home, "logs");
}

/** The current log file of `name` under `home`, and the rotated one; null for a name no extension can have. */
export function extensionLogFiles(home: string, name: string): { current: string; rotated: string } | null {
  if (!NAME.test(name)) return null;
  const current = join(extensionLogDir(home), `${name}.log`);
  return { current, rotated: `${current}.1` };
}

/** Control characters (but tab) as `\uXXXX`. */
function escaped(text: string): string {
  return text.replace(
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * One line of the file: `<ISO time> <what>`. A satellite's output line is
 * `stderr: <line>` (or `stdout:`); anything else `<level>: <message>` and its
 * fields as JSON, less the extension's name.
 */
export function formatLogLine(level: LogLevel, msg: string, fields: LogFields, at = Date.now()): string {
  const time = new Date(at).toISOString();
  const output = /^satellite (stderr|stdout)$/.exec(msg);
  if (output !== null && typeof fields.line === "string") return `${time} ${output[1]}: ${escaped(fields.line)}`;
  const { extension: _e, satellite: _s, ...rest } = fields;
  const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : "";
  return `${time} ${level}: ${escaped(msg)}${escaped(extra)}`;
}

/** Appends lines to extensions' log files under one folder. Never throws: a log that cannot be written is skipped. */
export class ExtensionLogs {
  readonly dir: string;
  readonly maxBytes: number;
  /** What this process believes each file's size is (re-read before a rotation). */
  readonly #sizes = new Map<string, number>();
  #made = false;

  constructor(dir: string, maxBytes = EXTENSION_LOG_BYTES) {
    this.dir = dir;
    this.maxBytes = maxBytes;
  }

  append(name: string, line: string): void {
    if (!NAME.test(name)) return;
    const file = join(this.dir, `${name}.log`);
    const bytes = Buffer.byteLength(line) + 1;
    try {
      if (!this.#made) {
        mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        this.#made = true;
      }
      let size = this.#sizes.get(file) ?? sizeOf(file);
      if (size + bytes > this.maxBytes && size > 0) {
        // Another process may have rotated it already: read the size before deciding.
        size = sizeOf(file);
        if (size + bytes > this.maxBytes && size > 0) {
          renameSync(file, `${file}.1`);
          size = 0;
        }
      }
      appendFileSync(file, `${line}\n`, { mode: 0o600 });
      this.#sizes.set(file, size + bytes);
    } catch {
      // A full disk or a removed home: the extension's log is not worth failing a call over.
    }
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * `base`, and beside it every entry about one extension (fields `extension`
 * or `satellite`) appended to that extension's file, at every level.
 */
export function teeExtensionLogs(base: Logger, logs: ExtensionLogs, fields: LogFields = {}): Logger {
  const emit =
    (level: LogLevel) =>
    (msg: string, more: LogFields = {}) => {
      base[level](msg, more);
      const all = { ...fields, ...more };
      const name =
        typeof all.extension === "string" ? all.extension : typeof all.satellite === "string" ? all.satellite : null;
      if (name !== null) logs.append(name, formatLogLine(level, msg, all));
    };
  return {
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    child: (more) => teeExtensionLogs(base.child(more), logs, { ...fields, ...more }),
  };
}
