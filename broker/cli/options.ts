/** The options the `tether` command takes, and how each is written in help. */
import type { ParseArgsConfig } from "node:util";

export const OPTIONS = {
  json: { type: "boolean" },
  yes: { type: "boolean", short: "y" },
  home: { type: "string" },
  only: { type: "string", multiple: true },
  ext: { type: "string" },
  session: { type: "string" },
  since: { type: "string" },
  denied: { type: "boolean" },
  hooks: { type: "boolean" },
  limit: { type: "string" },
  workspace: { type: "string" },
  "no-hooks": { type: "boolean" },
  socket: { type: "string" },
  port: { type: "string" },
  "pages-port": { type: "string" },
  "token-file": { type: "string" },
  follow: { type: "boolean", short: "f" },
  lines: { type: "string" },
  serve: { type: "boolean" },
  mcp: { type: "boolean" },
  "yes-widen": { type: "boolean" },
  dir: { type: "string" },
  store: { type: "string" },
  all: { type: "boolean" },
  purge: { type: "boolean" },
  diff: { type: "boolean" },
  file: { type: "string" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} satisfies ParseArgsConfig["options"];

export type OptionName = keyof typeof OPTIONS;

/** How each option is written in help, and what it means (a command may say more precisely). */
export const OPTION_HELP: Record<OptionName, readonly [string, string]> = {
  json: ["--json", "Machine-readable output: one JSON value on stdout"],
  yes: ["--yes, -y", "Do not ask for confirmation (scripts)"],
  home: ["--home <dir>", "The home folder (default: $TETHER_HOME or ~/.tether)"],
  only: ["--only <rule>", "Grant only this requested egress rule (repeatable)"],
  ext: ["--ext <name>", "Only this extension's rows"],
  session: ["--session <id>", "The session"],
  since: ["--since <when>", "Only rows from then on: 30s, 30m, 2h, 7d, or a date (2026-11-29T10:00)"],
  denied: ["--denied", "Only capability calls that were denied"],
  hooks: ["--hooks", "Each hook's answer to each event (the hook traces) instead"],
  limit: ["--limit <n>", "Only the newest n rows (default: the newest 1000 of each table)"],
  workspace: ["--workspace <dir>", "The folder command hooks run in (default: the session's last, else here)"],
  "no-hooks": ["--no-hooks", "Call the tool directly, without the hook bus (the audit records the bypass)"],
  socket: ["--socket <path>", "Listen on this Unix socket (default: <home>/tether.sock)"],
  port: ["--port <n>", "Listen on 127.0.0.1:<n> instead (0 picks a free port)"],
  "pages-port": ["--pages-port <n>", "Serve extension pages on 127.0.0.1:<n>, their own origin (default: a free port)"],
  "token-file": ["--token-file <path>", "The bearer token's file (default: <home>/serve.token)"],
  follow: ["--follow, -f", "Keep printing lines as they are written (until Ctrl-C)"],
  lines: ["--lines <n>", "Print the last n lines (default 50)"],
  serve: ["--serve", "Also run tether serve on the dev home (takes --socket, --port, --token-file)"],
  mcp: ["--mcp", "Also serve the dev session's tools as an MCP server on stdio"],
  "yes-widen": ["--yes-widen", "Approve a change that widens what it reaches without asking (shows the diff)"],
  dir: ["--dir <folder>", "The folder to create (default: ./<name>)"],
  store: ["--store <url>", "The fleet's PostgreSQL store (default $TETHER_STORE; docs/fleet.md)"],
  purge: ["--purge", "Also remove what it stored: its kv and skv keys and its [storage] database"],
  all: ["--all", "Grant every requested egress rule, also those an earlier --only withheld"],
  diff: ["--diff", "Also print how each changed source file differs (old against new)"],
  file: ["--file <path>", "Read the secret's value from this file (one trailing line break is dropped)"],
  timeout: ["--timeout <s>", "How long to wait for the browser's redirect, in seconds (default 300)"],
  help: ["--help, -h", "Show the help (of a command: tether <command> --help)"],
  version: ["--version, -V", "Show the version of tether and of its wire protocol"],
};

/** The options every command takes. */
export const COMMON: readonly OptionName[] = ["home", "help"];
