/**
 * `tether logs <name> [-f] [--lines <n>]`: the end of an extension's log file
 * (`<home>/logs/<name>.log`, written by every broker on the home:
 * broker/base/extension-logs.ts), and with -f each line as it is written,
 * across rotations, until SIGINT or SIGTERM.
 *
 * It reads files only: no store is opened, nothing is created but the logs
 * folder of a home that exists (so -f can watch it before the first line).
 */
import { existsSync, mkdirSync, openSync, readFileSync, readSync, closeSync, statSync, watch } from "node:fs";
import { extensionLogDir, extensionLogFiles } from "../base/extension-logs.js";
import { resolveHome } from "../store/home.js";
import { EXIT, UsageError, type CommandContext } from "./command.js";

/** Lines printed before following when no --lines is given. */
export const DEFAULT_LINES = 50;

function parseLines(given: unknown): number {
  if (given === undefined) return DEFAULT_LINES;
  const text = String(given).trim();
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n))
    throw new UsageError(`--lines '${String(given)}': expected a whole number of lines, 0 or more`);
  return n;
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

function sizeOf(file: string): number | null {
  try {
    return statSync(file).size;
  } catch {
    return null;
  }
}

/** The bytes of `file` from `from` to `to`. */
function readRange(file: string, from: number, to: number): Buffer {
  const fd = openSync(file, "r");
  try {
    const buffer = Buffer.alloc(to - from);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, from + read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

export async function runLogs(ctx: CommandContext): Promise<number> {
  const [name, extra] = ctx.args;
  if (extra !== undefined) throw new UsageError(`unexpected '${extra}': tether logs <name> [-f] [--lines <n>]`);
  const count = parseLines(ctx.values.lines);
  const follow = ctx.values.follow === true;
  const home = resolveHome(ctx.options.home);
  const files = extensionLogFiles(home, name!);
  if (files === null)
    throw new UsageError(`'${name}' is not an extension name (a-z, 0-9, _ and -, starting with a letter)`);
  if (!existsSync(home)) {
    console.error(`tether logs: no home at ${home}; pass --home <dir> (or set TETHER_HOME) to read another one's logs`);
    return EXIT.failed;
  }

  // The log holds what was written, not what was done: say where the calls are (stderr, so
  // the log on stdout stays the file's lines).
  process.stderr.write(
    `tether logs: ${name}'s log lines; its calls, refusals and capability decisions: tether audit --ext ${name}\n`,
  );
  const current = readText(files.current);
  const text = readText(files.rotated) + current;
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const shown = count === 0 ? [] : lines.slice(-count);
  if (shown.length > 0) process.stdout.write(`${shown.join("\n")}\n`);
  else if (!follow) {
    process.stderr.write(
      `tether logs: nothing logged for '${name}' yet (${files.current}); its satellites write there once they run\n`,
    );
  }
  if (!follow) return EXIT.ok;

  // Follow: the folder is watched (the file may not exist yet, and rotation replaces it).
  const dir = extensionLogDir(home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // From the end of what was printed: nothing written since is lost.
  let offset = Buffer.byteLength(current);
  let partial = "";
  const readMore = () => {
    const size = sizeOf(files.current);
    if (size === null) return;
    // Smaller than what was read: it was rotated, and this is the new file.
    if (size < offset) offset = 0;
    if (size === offset) return;
    const chunk = partial + readRange(files.current, offset, size).toString("utf8");
    offset = size;
    const complete = chunk.lastIndexOf("\n");
    if (complete === -1) {
      partial = chunk;
      return;
    }
    partial = chunk.slice(complete + 1);
    process.stdout.write(chunk.slice(0, complete + 1));
  };
  const file = `${name}.log`;
  const watcher = watch(dir, (_event, changed) => {
    if (changed === null || changed === file) readMore();
  });
  // Anything written between the first read and the watch.
  readMore();
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    watcher.on("error", stop);
  });
  watcher.close();
  return EXIT.ok;
}
