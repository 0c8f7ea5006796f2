/**
 * The `tether` command line: the operator's review/approve workflow, calls,
 * sessions and their preferences, the audit trail, logs, doctor, and the
 * author's dev loop.
 *
 * This file parses the arguments and runs one command. Every command is one
 * entry of `COMMANDS` (commands.ts): adding a command is adding an entry (and
 * its module); help is built from the table (help.ts), the options are in
 * options.ts.
 */
import { parseArgs } from "node:util";
import type { Broker } from "../broker.js";
import { defined } from "../base/defined.js";
import { TetherError } from "../base/errors.js";
import { paintFor } from "./colour.js";
import { EXIT, UsageError, type CommandContext } from "./command.js";
import { EnvironmentError, readEnvironment, type EnvironmentOptions } from "./environment.js";
import { didYouMean } from "./suggest.js";
import { fleetOptionsOf, inFleet } from "./fleet-join.js";

export { EXIT, UsageError } from "./command.js";
export type { Command, CommandContext } from "./command.js";
import { HELP, commandHelp, findCommand, paintHeadings, unknownCommand } from "./help.js";
import { OPTIONS } from "./options.js";

export { COMMANDS } from "./commands.js";
export { HELP, commandHelp, synopses } from "./help.js";

const OPTION_NAMES = Object.keys(OPTIONS).map((name) => `--${name}`);

/** What parseArgs refused, in tether's words, with the option nearest a mistyped one. */
function argsError(err: unknown): string {
  const e = err as Error & { code?: string };
  if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const option = /'(-[^'=]*)/.exec(e.message)?.[1] ?? "";
    const near = option.startsWith("--") ? didYouMean(option, OPTION_NAMES) : "";
    return `unknown option '${option}'.${near} Run 'tether help'`;
  }
  const message = e.message.replace(/^[A-Z]/, (c) => c.toLowerCase());
  return `${message}. Run 'tether help'`;
}

// ── dispatch ─────────────────────────────────────────────────────────────

/**
 * Runs one command. `env` is the environment it honours (default this process's),
 * read once here: the library below is handed options, never the environment.
 */
export async function main(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<number> {
  const paint = paintFor(process.stdout, env);
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    console.error(`tether: ${argsError(err)}`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  const [name, ...args] = positionals;
  const json = values.json === true;

  if (values.version === true) {
    const { packageVersion, WIRE_PROTOCOL } = await import("../base/version.js");
    const version = packageVersion();
    console.log(
      json
        ? JSON.stringify({ version, wire: WIRE_PROTOCOL }, null, 2)
        : `tether ${version} (wire protocol ${WIRE_PROTOCOL})`,
    );
    return EXIT.ok;
  }
  if (name === undefined) {
    console.log(paintHeadings(HELP, paint));
    return EXIT.ok;
  }
  const command = findCommand(name);
  if (command === null) {
    console.error(`tether: ${unknownCommand(name)}`);
    return EXIT.usage;
  }
  if (values.help === true) {
    console.log(commandHelp(command, paint));
    return EXIT.ok;
  }
  // Usage first: a missing argument never opens (or creates) a home.
  if (command.needs !== undefined && args.length < command.needs[0]) {
    console.error(`tether ${name}: missing ${command.needs[1]}`);
    return EXIT.usage;
  }
  let environment: EnvironmentOptions;
  try {
    environment = readEnvironment(env);
  } catch (err) {
    if (!(err instanceof EnvironmentError)) throw err;
    console.error(`tether: ${err.message}`);
    return EXIT.usage;
  }
  // --home wins over TETHER_HOME.
  const options: EnvironmentOptions = { ...environment, ...defined({ home: values.home, store: values.store }) };
  const ctx: CommandContext = {
    name,
    args,
    values,
    options,
    env,
    json,
    paint,
    out: (value, text) => console.log(json ? JSON.stringify(value, null, 2) : text),
    withBroker: async (fn) => {
      const { Broker } = await import("../broker.js");
      let broker: Broker | null = null;
      try {
        const fleet = fleetOptionsOf(options);
        broker = Broker.open(options);
        const opened = broker;
        return await (fleet === null ? fn(opened) : inFleet(opened, fleet, () => fn(opened)));
      } finally {
        await broker?.close();
      }
    },
    help: {
      overview: () => paintHeadings(HELP, paint),
      command: (topic) => {
        const found = findCommand(topic);
        return found === null ? null : commandHelp(found, paint);
      },
      unknown: unknownCommand,
    },
  };
  try {
    return await command.run(ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`tether ${name}: ${err.message}`);
      return EXIT.usage;
    }
    // The secrets folder's own errors name the fix (a chmod, a chown): they are not unexpected.
    if (err instanceof TetherError || (err instanceof Error && err.name === "SecretStoreError")) {
      console.error(`tether ${name}: ${err.message}`);
      return EXIT.failed;
    }
    console.error(`tether ${name}: unexpected failure: ${(err as Error).message}`);
    return EXIT.failed;
  }
}
