/**
 * The broker's log: one line per event, to stderr. Quiet by default (warnings
 * and errors); a lower `level` shows more (the tether command's `TETHER_LOG`).
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** The level when none is given. */
export const DEFAULT_LOG_LEVEL: LogLevel = "warn";

export type LogSink = (level: LogLevel, msg: string, fields: LogFields) => void;

const stderrSink: LogSink = (level, msg, fields) => {
  const extra = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : "";
  process.stderr.write(`tether ${level}: ${msg}${extra}\n`);
};

/** A logger writing to `sink` (stderr by default) at `level` (default warn) and above. */
export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const level = options.level ?? DEFAULT_LOG_LEVEL;
  const sink = options.sink ?? stderrSink;
  const base = options.fields ?? {};
  const emit =
    (at: LogLevel) =>
    (msg: string, fields: LogFields = {}) => {
      if (RANK[at] >= RANK[level]) sink(at, msg, { ...base, ...fields });
    };
  return {
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    child: (fields) => createLogger({ level, sink, fields: { ...base, ...fields } }),
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger({ level: "error", sink: () => {} });
