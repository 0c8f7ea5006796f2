/**
 * The `tether` command line: the operator's review/approve workflow, calls,
 * sessions and their preferences, the audit trail, logs, doctor, and the
 * author's dev loop.
 *
 * Every command is one entry of `COMMANDS` below: its usage lines (shown by
 * `tether help`, checked against docs/operators.md by tests/unit/cli-help.test.ts),
 * its help, the options it reads and its `run`. Adding a command is adding an
 * entry (and its module, loaded by `run` when the command runs, so help and
 * usage errors stay fast).
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { Broker } from "../broker.js";
import { defined } from "../base/defined.js";
import { TetherError } from "../base/errors.js";
import { PLAIN, paintFor, type Paint } from "./colour.js";
import { EXIT, UsageError, confirm, type Command, type CommandContext } from "./command.js";
import { EnvironmentError, readEnvironment, type EnvironmentOptions } from "./environment.js";
import { didYouMean } from "./suggest.js";

export { EXIT, UsageError } from "./command.js";
export type { Command, CommandContext } from "./command.js";

const OPTIONS = {
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
  "token-file": { type: "string" },
  follow: { type: "boolean", short: "f" },
  lines: { type: "string" },
  serve: { type: "boolean" },
  mcp: { type: "boolean" },
  "yes-widen": { type: "boolean" },
  dir: { type: "string" },
  all: { type: "boolean" },
  diff: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} satisfies ParseArgsConfig["options"];

type OptionName = keyof typeof OPTIONS;

/** How each option is written in help, and what it means (a command may say more precisely). */
const OPTION_HELP: Record<OptionName, readonly [string, string]> = {
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
  "token-file": ["--token-file <path>", "The bearer token's file (default: <home>/serve.token)"],
  follow: ["--follow, -f", "Keep printing lines as they are written (until Ctrl-C)"],
  lines: ["--lines <n>", "Print the last n lines (default 50)"],
  serve: ["--serve", "Also run tether serve on the dev home (takes --socket, --port, --token-file)"],
  mcp: ["--mcp", "Also serve the dev session's tools as an MCP server on stdio"],
  "yes-widen": ["--yes-widen", "Approve a change that widens what it reaches without asking (shows the diff)"],
  dir: ["--dir <folder>", "The folder to create (default: ./<name>)"],
  all: ["--all", "Grant every requested egress rule, also those an earlier --only withheld"],
  diff: ["--diff", "Also print how each changed source file differs (old against new)"],
  help: ["--help, -h", "Show the help (of a command: tether <command> --help)"],
  version: ["--version, -V", "Show the version of tether and of its wire protocol"],
};

/** The options every command takes. */
const COMMON: readonly OptionName[] = ["home", "help"];

// ── the commands ─────────────────────────────────────────────────────────

const OPERATORS = "docs/operators.md";

export const COMMANDS: readonly Command[] = [
  {
    name: "install",
    usage: [{ usage: "install <dir> [--yes]", summary: ["Validate, bundle, dry-boot and store an extension (pending until", "approved); --yes replaces one installed from another folder"] }],
    help:
      "Reads <dir>/manifest.toml and checks every field, bundles the entry with esbuild, boots the artifact once in the jail to check that it serves what the manifest declares, and stores it in the home. " +
      "A new extension is pending: nothing runs until it is approved. Reinstalling after a change makes it 'changed' until approved again. Installing another folder under a name already installed asks first (--yes: proceed).",
    options: ["yes", "json"],
    doc: `${OPERATORS}#1-install`,
    needs: [1, "the extension folder: tether install <dir>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const { runInstall } = await import("./install.js");
        return EXIT[await runInstall(broker, ctx.args[0]!, { json: ctx.json, yes: ctx.values.yes === true, options: ctx.options, confirm })];
      }),
  },
  {
    name: "check",
    usage: [{ usage: "check <dir>", summary: ["Check a folder before installing it: manifest, bundle, types, and a", "dry boot in the jail (served vs declared); every problem at once"] }],
    help: "Everything install would refuse, a type check (deno check), and a dry boot of the bundled artifact in the jail that compares what it serves with what the manifest declares — all reported together, each with what to change. Writes nothing to the home.",
    options: ["json"],
    doc: `${OPERATORS}#checking-a-folder-tether-check`,
    run: async (ctx) => {
      const { runCheck } = await import("./check.js");
      return EXIT[await runCheck(ctx.args, ctx.options, ctx.json)];
    },
  },
  {
    name: "review",
    usage: [{ usage: "review <name> [--diff]", summary: ["What it can reach, its tools, hooks and limits; on an upgrade, the diff", "and the source files that changed (--diff: how)"] }],
    help: "Says in plain words what the installed extension can reach, the tools, hooks and commands it adds and its limits; after an upgrade, what changed since the approval (a widening in capitals), the artifact's size and hash, and the source files that differ; --diff prints how they differ.",
    options: ["diff", "json"],
    doc: `${OPERATORS}#2-review`,
    needs: [1, "the extension name: tether review <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const shown = (await import("./review.js")).reviewOutput(broker, ctx.args[0]!, ctx.values.diff === true);
        ctx.out(shown.value, shown.text);
        return EXIT.ok;
      }),
  },
  {
    name: "approve",
    usage: [{ usage: "approve <name> [--only <rule>...] [--all] [--yes]", summary: ["Approve what is installed (narrow egress with --only; a later", "approval keeps that narrowing unless --all)"] }],
    help:
      "Shows the review on stderr and asks on the terminal; without one (a script) it declines, exit 3, unless --yes is given. " +
      "The approval pins the manifest and artifact as installed; --only grants a subset of the requested egress rules, and a later approval keeps withholding what it left out unless --all is given.",
    options: ["only", "all", "yes", "json"],
    doc: `${OPERATORS}#3-approve`,
    needs: [1, "the extension name: tether approve <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const { renderReview } = await import("../registry/review.js");
        const name = ctx.args[0]!;
        const registry = broker.registry;
        if (ctx.values.all === true && ctx.values.only !== undefined) throw new UsageError("--only and --all do not combine: --only grants the rules named, --all every rule requested");
        const { installed, review } = (await import("./review.js")).reviewFor(broker, name);
        if (ctx.values.yes !== true) {
          if (!ctx.json) console.error(renderReview(review, installed));
          if (!(await confirm(`Approve ${name} ${installed.version}?`))) {
            console.error(process.stdin.isTTY ? "not approved" : "not approved: no terminal to confirm on; pass --yes to approve from a script");
            return EXIT.declined;
          }
        }
        const only = ctx.values.only as string[] | undefined;
        const approval = registry.approve(name, { ...(only !== undefined ? { onlyNet: only } : {}), all: ctx.values.all === true });
        const kept = only === undefined && approval.withheldNet.length > 0 ? `; still withheld by an earlier --only: ${approval.withheldNet.join(", ")} (--all grants it)` : "";
        ctx.out({ name, approval }, `approved ${name} ${installed.version}${approval.grants.net.length ? ` (egress: ${approval.grants.net.join(", ")}${kept})` : ` (no egress${kept})`}`);
        return EXIT.ok;
      }),
  },
  {
    name: "revoke",
    usage: [{ usage: "revoke <name>", summary: ["Revoke the approval; running satellites stop on their next call"] }],
    help: "Stamps the current approval revoked: calls are refused from then on, and satellites already running stop at their next call. The history stays.",
    options: ["json"],
    doc: `${OPERATORS}#7-revoke`,
    needs: [1, "the extension name: tether revoke <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const name = ctx.args[0]!;
        const revoked = broker.registry.revoke(name);
        ctx.out({ name, revoked }, revoked ? `revoked ${name}; running satellites stop on their next call` : `${name} had no active approval`);
        return EXIT.ok;
      }),
  },
  {
    name: "uninstall",
    usage: [{ usage: "uninstall <name>", summary: ["Remove an extension (its approval is revoked)"] }],
    help: "Revokes the approval and removes the install. The approval history and the ledger stay; installing the name again needs a new approval.",
    options: ["json"],
    doc: `${OPERATORS}#8-uninstall`,
    needs: [1, "the extension name: tether uninstall <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const name = ctx.args[0]!;
        broker.registry.uninstall(name);
        ctx.out({ name, uninstalled: true }, `uninstalled ${name}`);
        return EXIT.ok;
      }),
  },
  {
    name: "list",
    usage: [{ usage: "list", summary: ["Installed extensions: pending / approved / revoked / changed"] }],
    help: "One line per installed extension: name, version, status and description.",
    options: ["json"],
    doc: `${OPERATORS}#status-words`,
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const registry = broker.registry;
        const rows = registry.list().map((i) => ({ name: i.name, version: i.version, status: registry.status(i), description: i.description }));
        ctx.out(rows, rows.length === 0 ? "no extensions installed" : rows.map((r) => `${r.name.padEnd(20)} ${r.version.padEnd(10)} ${r.status.padEnd(9)} ${r.description}`).join("\n"));
        return EXIT.ok;
      }),
  },
  {
    name: "call",
    usage: [
      {
        usage: "call <name> <tool> [json] [--session <id>] [--workspace <dir>] [--no-hooks]",
        summary: [
          "Call a tool once through a session (default id: cli), so its",
          "hooks apply; print the answer (partials and hook notes on stderr).",
          "--no-hooks calls it directly, and the audit records the bypass",
        ],
      },
    ],
    help:
      "The JSON arguments (default {}) are one word: quote them. Arguments that are not JSON are refused before anything opens (exit 2), naming the line and column. " +
      "A tool that answers an error exits 4, with its code and message on stderr.",
    options: [["session", "The session to call in (default: cli)"], "workspace", "no-hooks", "json"],
    doc: `${OPERATORS}#4-call`,
    needs: [2, "the extension and tool names: tether call <name> <tool> [json]"],
    run: async (ctx) => {
      const callCli = await import("./call.js");
      const call = callCli.parseCallArgs(ctx.args, ctx.values as Parameters<typeof callCli.parseCallArgs>[1]);
      if (typeof call === "string") throw new UsageError(call);
      return ctx.withBroker(async (broker) => {
        const { outcome, notes } = await callCli.runCall(broker, call, (text) => process.stderr.write(`… ${text}\n`));
        for (const note of notes) process.stderr.write(`… note: ${note}\n`);
        if (outcome.ok) {
          ctx.out(outcome, outcome.value.content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json))).join("\n"));
          return EXIT.ok;
        }
        if (ctx.json) ctx.out(outcome, "");
        else console.error(`${outcome.error.code}: ${outcome.error.msg}`);
        return EXIT.callFailed;
      });
    },
  },
  {
    name: "session",
    usage: [
      { usage: "session status [--session <id>] [--workspace <dir>]", summary: ["Open a session here (real boots): each extension's state and why"] },
      { usage: "session enable <name> [--session <id>]" },
      {
        usage: "session disable <name> [--session <id>]",
        summary: ["Turn an extension on or off: the global default, or one session's", "override (a live session applies it on reload)"],
      },
      { usage: "session reset <name> --session <id>", summary: ["Remove a session's override: the global default applies again"] },
    ],
    help: "status opens the session in this process (real boots, default id: default) and prints each extension's state and why; enable, disable and reset write the saved preferences.",
    options: [["session", "The session (status: default 'default'; else without it: the global default)"], "workspace", "json"],
    doc: `${OPERATORS}#sessions`,
    run: async (ctx) => {
      const sessionCli = await import("./session.js");
      const parsed = sessionCli.parseSessionArgs(ctx.args, ctx.values as Parameters<typeof sessionCli.parseSessionArgs>[1]);
      if (typeof parsed === "string") throw new UsageError(parsed);
      return ctx.withBroker(async (broker) => {
        if (parsed.action === "status") {
          const result = await sessionCli.sessionStatus(broker, parsed.session ?? sessionCli.DEFAULT_SESSION, parsed.workspace);
          for (const note of result.closeNotes) process.stderr.write(`… SessionEnd hook: ${note}\n`);
          ctx.out(result.statuses, sessionCli.renderStatus(result.statuses));
          return EXIT.ok;
        }
        const change = sessionCli.changePreference(broker, parsed.action, parsed.extension ?? "", parsed.session);
        ctx.out(change, sessionCli.renderChange(change));
        return EXIT.ok;
      });
    },
  },
  {
    name: "audit",
    usage: [
      { usage: "audit [--ext <name>] [--session <id>] [--since <when>] [--limit <n>] [--denied]", summary: ["The invocation ledger and capability audit"] },
      { usage: "audit --hooks [--ext <name>] [--session <id>] [--since <when>] [--limit <n>]", summary: ["Each hook's answer to each event (the hook traces)"] },
    ],
    help: "Oldest first, at most the newest 1000 rows of each table; the filters combine with AND. --denied and --hooks do not combine.",
    options: ["ext", ["session", "Only this session's rows (cli for tether call)"], "since", "limit", "denied", "hooks", "json"],
    doc: `${OPERATORS}#9-audit`,
    run: async (ctx) => {
      const { queryAudit, renderAudit, queryHookTraces, renderHookTraces, parseLimit, parseSince, SinceError, LimitError } = await import("./audit.js");
      const v = ctx.values;
      if (v.hooks === true && v.denied === true) {
        throw new UsageError("--hooks and --denied do not combine: --denied keeps refused capability calls, --hooks lists hook traces");
      }
      let filters;
      try {
        if (typeof v.since === "string") parseSince(v.since);
        filters = {
          ...(typeof v.ext === "string" ? { extension: v.ext } : {}),
          ...(typeof v.session === "string" ? { session: v.session } : {}),
          ...(typeof v.since === "string" ? { since: v.since } : {}),
          ...(typeof v.limit === "string" ? { limit: parseLimit(v.limit) } : {}),
        };
      } catch (err) {
        if (err instanceof SinceError || err instanceof LimitError) throw new UsageError(err.message);
        throw err;
      }
      return ctx.withBroker(async (broker) => {
        if (v.hooks === true) {
          const traces = queryHookTraces(broker.store, filters);
          ctx.out(traces, renderHookTraces(traces));
          return EXIT.ok;
        }
        const rows = queryAudit(broker.store, { ...filters, denied: v.denied === true });
        ctx.out(rows, renderAudit(rows, ctx.paint));
        return EXIT.ok;
      });
    },
  },
  {
    name: "logs",
    usage: [{ usage: "logs <name> [-f] [--lines <n>]", summary: ["An extension's log: its satellites' stderr and the broker's lines", "about it (<home>/logs/<name>.log); -f follows"] }],
    help:
      "Every broker on the home (tether call, serve, mcp, a harness) appends to it, whatever TETHER_LOG says: what the extension's satellites wrote to stderr and stdout, " +
      "its log capability's lines, and what the broker logged about it (a failed boot, a bound that stopped it). Each file is kept under 1 MiB, the one before it as <name>.log.1.",
    options: ["follow", "lines"],
    doc: `${OPERATORS}#logs`,
    needs: [1, "the extension name: tether logs <name>"],
    run: async (ctx) => {
      const { runLogs } = await import("./logs.js");
      return runLogs(ctx);
    },
  },
  {
    name: "serve",
    usage: [{ usage: "serve [--socket <path> | --port <n>] [--token-file <path>]", summary: ["Serve the JSON-RPC 2.0 API over WebSocket (docs/api.md)"] }],
    help: "Runs until SIGTERM or SIGINT: in-flight calls finish, sessions close, exit 0. Clients authenticate with the bearer token in the token file (made with mode 0600 on first run).",
    options: ["socket", "port", "token-file"],
    doc: `${OPERATORS}#tether-serve`,
    run: async (ctx) => {
      const { runServe } = await import("../serve/command.js");
      const v = ctx.values as { socket?: string; port?: string; "token-file"?: string };
      return runServe({ broker: ctx.options, ...defined({ socket: v.socket, port: v.port, tokenFile: v["token-file"] }) });
    },
  },
  {
    name: "mcp",
    usage: [{ usage: "mcp --session <id> [--workspace <dir>]", summary: ["Serve a session's active tools as an MCP server on stdio"] }],
    help: "stdout is the MCP channel; everything else goes to stderr. Stops when the client closes stdin, or on SIGTERM/SIGINT. Registering it with a client: docs/mcp.md.",
    options: [["session", "The session whose active tools to serve (required)"], "workspace"],
    doc: `${OPERATORS}#tether-mcp`,
    run: async (ctx) => {
      const { runMcp } = await import("../mcp/command.js");
      const v = ctx.values as { session?: string; workspace?: string };
      return runMcp({ broker: ctx.options, ...defined({ session: v.session, workspace: v.workspace }) });
    },
  },
  {
    name: "dev",
    usage: [
      {
        usage: "dev <folder> [--home <dir>] [--yes-widen] [--serve | --mcp]",
        summary: ["Develop an extension: install and approve it in a dev home of its", "own; rebuild, re-approve and serve it on every change"],
      },
    ],
    help:
      "The dev home is never the operator's: by default $XDG_STATE_HOME/tether-dev/<name> (~/.local/state/tether-dev/<name>). " +
      "The first build there is approved for exactly what the manifest requests; a later change is re-approved by itself when it reaches no further " +
      "(no new egress rule or hook, no raised limit). One that does stops with the diff and asks, on the terminal, unless --yes-widen. " +
      "Try it with tether call --home <dev home>; --serve and --mcp serve the dev home while it runs (Ctrl-C stops).",
    options: [
      ["home", "The dev home (default: $XDG_STATE_HOME/tether-dev/<name>), never the operator's"],
      "yes-widen",
      "serve",
      "socket",
      "port",
      "token-file",
      "mcp",
    ],
    doc: "docs/authors.md#the-dev-loop-tether-dev",
    needs: [1, "the extension folder: tether dev <folder>"],
    run: async (ctx) => {
      const { runDev } = await import("./dev.js");
      return runDev(ctx);
    },
  },
  {
    name: "new",
    usage: [{ usage: "new <name> [--dir <folder>]", summary: ["Scaffold an extension (manifest, a tool, a hook, deno tests, the SDK)"] }],
    help: "Writes a new extension folder: manifest.toml, index.ts with one tool and one hook, deno tests on the SDK's test kit, deno.json, and the SDK in its node_modules. `deno test` passes in it at once, and `tether install` accepts it. Refuses a name the manifest would refuse and a folder that is not empty.",
    options: ["dir"],
    doc: "docs/authors.md#tether-new",
    run: async (ctx) => (await import("./new.js")).runNew(ctx.args, ctx.values.dir as string | undefined),
  },
  {
    name: "doctor",
    usage: [{ usage: "doctor", summary: ["Check Deno, the sandbox layers and the store"] }],
    help: "Checks that Deno runs, that bubblewrap can make namespaces, each jail layer, that the store opens with every migration applied, the home's mode, hooks.json and the socket folders. Exit 1 when any fails; each failure says how to fix it.",
    options: ["json"],
    doc: `${OPERATORS}#doctor`,
    run: async (ctx) => {
      const { runChecks } = await import("./doctor.js");
      const checks = runChecks(ctx.options);
      const p = ctx.paint;
      ctx.out(checks, checks.map((c) => `${c.ok ? p.green("ok  ") : p.red("FAIL")} ${c.name}: ${c.detail}`).join("\n"));
      return checks.every((c) => c.ok) ? EXIT.ok : EXIT.failed;
    },
  },
  {
    name: "help",
    usage: [{ usage: "help [<command>]", summary: ["Show this help, or one command's (also: tether <command> --help)"] }],
    help: "Without a command, the list of commands; with one, its usage, options and where the docs say more.",
    options: [],
    doc: `${OPERATORS}#the-command`,
    run: async (ctx) => {
      const topic = ctx.args[0];
      if (topic === undefined) {
        console.log(paintHeadings(HELP, ctx.paint));
        return EXIT.ok;
      }
      const command = findCommand(topic);
      if (command === null) throw new UsageError(unknownCommand(topic));
      console.log(commandHelp(command, ctx.paint));
      return EXIT.ok;
    },
  },
];

function findCommand(name: string): Command | null {
  return COMMANDS.find((c) => c.name === name) ?? null;
}

function unknownCommand(name: string): string {
  return `unknown command '${name}'.${didYouMean(name, COMMANDS.map((c) => c.name))} Run 'tether help'`;
}

// ── help ─────────────────────────────────────────────────────────────────

const SUMMARY_COLUMN = 33;

/** The commands' block of `tether help`: usage lines at two spaces, summaries at column 33. */
function commandsBlock(): string {
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
  --help, -h       This help; tether <command> --help for one command's
  --version, -V    The version of tether and of its wire protocol

Environment: TETHER_HOME, TETHER_LOG (debug, info, warn, error), TETHER_DENO,
TETHER_INSECURE_NO_SANDBOX=1, TETHER_JAIL_UID/GID, TETHER_JAIL_ROOT,
TETHER_CGROUP (auto, none, v1, v2), TETHER_NATIVE_DIR, TETHER_OPERATOR;
NO_COLOR (no colour on a terminal), XDG_STATE_HOME (where tether dev keeps dev homes).

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
function wrap(text: string, width: number): string {
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
function paintHeadings(text: string, paint: Paint): string {
  return text.replace(/^(Usage|Commands|Options|Environment|Exit codes):/gm, (heading) => paint.bold(heading));
}

/** Every option's name as written on the command line (`--json`), for suggestions. */
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
export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): Promise<number> {
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
    console.log(json ? JSON.stringify({ version, wire: WIRE_PROTOCOL }, null, 2) : `tether ${version} (wire protocol ${WIRE_PROTOCOL})`);
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
  const options: EnvironmentOptions = { ...environment, ...defined({ home: values.home }) };
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
        broker = Broker.open(options);
        return await fn(broker);
      } finally {
        await broker?.close();
      }
    },
  };
  try {
    return await command.run(ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`tether ${name}: ${err.message}`);
      return EXIT.usage;
    }
    if (err instanceof TetherError) {
      console.error(`tether ${name}: ${err.message}`);
      return EXIT.failed;
    }
    console.error(`tether ${name}: unexpected failure: ${(err as Error).message}`);
    return EXIT.failed;
  }
}
