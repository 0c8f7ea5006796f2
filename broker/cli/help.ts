/** What `tether help` and `tether <command> --help` print, built from the command table. */
import { PLAIN, type Paint } from "./colour.js";
import type { Command } from "./command.js";
import { COMMANDS } from "./commands.js";
import { COMMON, OPTION_HELP, type OptionName } from "./options.js";
import { didYouMean } from "./suggest.js";

export function findCommand(name: string): Command | null {
  return COMMANDS.find((c) => c.name === name) ?? null;
}

export function unknownCommand(name: string): string {
  return `unknown command '${name}'.${didYouMean(
    name,
    COMMANDS.map((c) => c.name),
  )} Run 'tether help'`;
}

// ── help ─────────────────────────────────────────────────────────────────

const SUMMARY_COLUMN = 33;

/** The commands' block of `tether help`: usage lines at two spaces, summaries at column 33. */
export function commandsBlock(): string {
  const lines: string[] = [];
  for (const command of COMMANDS) {
    command.usage.forEach((line, i) => {
      // Further usage lines of one command are indented under the first's arguments.
      const usage = i === 0 ? line.usage : `${" ".repeat(command.name.length)}${line.usage.slice(command.name.length)}`;
      const [first, ...rest] = line.summary ?? [];
      const lead = `  ${usage}`;
      if (first === undefined) lines.push(lead);
      else if (lead.length < SUMMARY_COLUMN - 1) lines.push(`${lead.padEnd(SUMMARY_COLUMN)}${first}`);
      else lines.push(lead, `${" ".repeat(SUMMARY_COLUMN)}${first}`);
      for (const more of rest) lines.push(`${" ".repeat(SUMMARY_COLUMN)}${more}`);
    });
  }
  return lines.join("\n");
}

export const HELP = `tether — run untrusted agent extensions in jailed Deno satellites

Usage: tether <command> [options]

Commands:
${commandsBlock()}

Options:
  --json           Machine-readable output (every listing)
  --yes            Do not ask for confirmation (scripts)
  --home <dir>     The home folder (default: $TETHER_HOME or ~/.tether)
  --store <url>    The fleet's PostgreSQL store, shared with other hosts
                   (default: $TETHER_STORE; none: this home alone)
  --help, -h       This help; tether <command> --help for one command's
  --version, -V    The version of tether and of its wire protocol

Environment: TETHER_HOME, TETHER_LOG (debug, info, warn, error), TETHER_DENO,
TETHER_INSECURE_NO_SANDBOX=1, TETHER_JAIL_UID/GID, TETHER_JAIL_ROOT,
TETHER_CGROUP (auto, none, v1, v2), TETHER_NATIVE_DIR, TETHER_OPERATOR,
TETHER_STORE (postgres://…), TETHER_FLEET_HOST (this host's name in the fleet),
TETHER_FLEET_LEASE_MS (how soon a dead host's sessions open elsewhere),
TETHER_BUNDLE_CACHE (where bundles are kept; off: none);
NO_COLOR (no colour on a terminal), XDG_STATE_HOME (where tether dev keeps dev homes),
XDG_CACHE_HOME (where bundles are kept, without TETHER_BUNDLE_CACHE).

Exit codes: 0 ok, 1 failed (the message says what to run next), 2 bad usage,
3 not confirmed, 4 the called tool answered an error.`;

/** The usage lines of `command`, as typed: `tether install <dir>`. */
export function synopses(command: Command): string[] {
  return command.usage.map((line) => `tether ${line.usage}`);
}

/** `tether <command> --help`. */
export function commandHelp(command: Command, paint: Paint = PLAIN): string {
  const options = [...command.options, ...COMMON].map((o) => {
    const [name, meaning] = typeof o === "string" ? [o as OptionName, null] : [o[0] as OptionName, o[1]];
    const [written, general] = OPTION_HELP[name];
    return [written, meaning ?? general] as const;
  });
  const width = Math.max(...options.map(([written]) => written.length)) + 2;
  const summary = command.usage.flatMap((line) => line.summary ?? []).join(" ");
  return [
    `${paint.bold("Usage:")} ${synopses(command).join("\n       ")}`,
    "",
    wrap(`${summary}. ${command.help}`, 80),
    "",
    paint.bold("Options:"),
    ...options.map(([written, meaning]) => `  ${written.padEnd(width)}${meaning}`),
    "",
    `More: ${command.doc}`,
  ].join("\n");
}

/** `text` broken into lines of at most `width` characters, at spaces. */
export function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") lines.push(line);
  return lines.join("\n");
}

/** The help's section headings in bold (on a terminal). */
export function paintHeadings(text: string, paint: Paint): string {
  return text.replace(/^(Usage|Commands|Options|Environment|Exit codes):/gm, (heading) => paint.bold(heading));
}

/** Every option's name as written on the command line (`--json`), for suggestions. */
