/**
 * What one `tether` command is, and what it is handed when it runs. The
 * commands themselves are listed in `main.ts` (`COMMANDS`): adding one is one
 * entry there (its usage, its help, its options, its `run`) and its module.
 */
import { createInterface } from "node:readline/promises";
import type { Broker } from "../broker.js";
import type { Paint } from "./colour.js";
import type { EnvironmentOptions } from "./environment.js";

export const EXIT = { ok: 0, failed: 1, usage: 2, declined: 3, callFailed: 4 } as const;

/** Bad usage (exit 2): the message says what is wrong and, where it helps, the usage line. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** The options every command may be given (see OPTION_HELP in main.ts for what each means). */
export type OptionValues = Readonly<Record<string, string | boolean | string[] | undefined>>;

export interface CommandContext {
  /** The command's name as given (`install`). */
  readonly name: string;
  /** The positional arguments after the command's name. */
  readonly args: readonly string[];
  /** The options given, parsed (`values.session`, `values.yes`...). */
  readonly values: OptionValues;
  /** The broker's options: the environment's, with --home applied. */
  readonly options: EnvironmentOptions;
  /** The environment `main` was given (read it here, not from process.env). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly json: boolean;
  /** Colour for stdout (plain unless stdout is a terminal and NO_COLOR is unset). */
  readonly paint: Paint;
  /** Prints `value` as JSON with --json, else `text`, on stdout. */
  out(value: unknown, text: string): void;
  /** Opens the broker on the home, runs `fn`, closes the broker (also when `fn` throws). */
  withBroker<T>(fn: (broker: Broker) => Promise<T>): Promise<T>;
  /** The help texts (help.ts), handed in by main.ts: help.ts lists the commands, so a command cannot import it. */
  readonly help: HelpTexts;
}

/** What `tether help` prints, painted for stdout. */
export interface HelpTexts {
  /** The list of commands (`tether help`). */
  overview(): string;
  /** One command's usage, options and docs (`tether help <name>`); null when there is no such command. */
  command(name: string): string | null;
  /** Why `name` is not a command, with the nearest one. */
  unknown(name: string): string;
}

/** One usage line (after `tether `) and what it does, for `tether help`. */
export interface UsageLine {
  readonly usage: string;
  /** Lines of the summary shown beside it in `tether help`; none for a line that shares the next one's. */
  readonly summary?: readonly string[];
}

export interface Command {
  readonly name: string;
  /** The usage lines, each starting with the command's name (`install <dir>`); `tether help` and `--help` show them. */
  readonly usage: readonly UsageLine[];
  /** What `tether <name> --help` says under the usage: a few sentences. */
  readonly help: string;
  /** The options it reads, beyond --home and --help: a name of OPTION_HELP, or [name, what it means here]. */
  readonly options: ReadonlyArray<string | readonly [string, string]>;
  /** Where docs/operators.md (or another doc) says more. */
  readonly doc: string;
  /** Positional arguments it needs, checked before anything opens a home: [how many, what is missing]. */
  readonly needs?: readonly [number, string];
  readonly run: (ctx: CommandContext) => Promise<number>;
}

/**
 * Asks `question` on the terminal (stderr, so stdout stays the answer); false
 * without one (a script, a pipe on stdin).
 */
export async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}
