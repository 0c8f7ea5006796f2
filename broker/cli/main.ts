/**
 * The `tether` command line: the operator's review/approve workflow, calls,
 * sessions and their preferences, the audit trail and doctor.
 */
import { createInterface } from "node:readline/promises";
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { Broker } from "../broker.js";
import { defined } from "../base/defined.js";
import { TetherError } from "../base/errors.js";
import { EnvironmentError, readEnvironment, type EnvironmentOptions } from "./environment.js";

export const EXIT = { ok: 0, failed: 1, usage: 2, declined: 3, callFailed: 4 } as const;

export const HELP = `tether — run untrusted agent extensions in jailed Deno satellites

Usage: tether <command> [options]

Commands:
  install <dir> [--yes]          Validate, bundle, dry-boot and store an extension (pending until
                                 approved); --yes replaces one installed from another folder
  check <dir>                    Check a folder before installing it: manifest, bundle, types, and a
                                 dry boot in the jail (served vs declared); every problem at once
  review <name> [--diff]         What it can reach, its tools, hooks and limits; on an upgrade, the diff
                                 and the source files that changed (--diff: how)
  approve <name> [--only <rule>...] [--all] [--yes]
                                 Approve what is installed (narrow egress with --only; a later
                                 approval keeps that narrowing unless --all)
  revoke <name>                  Revoke the approval; running satellites stop on their next call
  uninstall <name>               Remove an extension (its approval is revoked)
  list                           Installed extensions: pending / approved / revoked / changed
  call <name> <tool> [json] [--session <id>] [--workspace <dir>] [--no-hooks]
                                 Call a tool once through a session (default id: cli), so its
                                 hooks apply; print the answer (partials and hook notes on stderr).
                                 --no-hooks calls it directly, and the audit records the bypass
  session status [--session <id>] [--workspace <dir>]
                                 Open a session here (real boots): each extension's state and why
          enable <name> [--session <id>]
          disable <name> [--session <id>]
                                 Turn an extension on or off: the global default, or one session's
                                 override (a live session applies it on reload)
          reset <name> --session <id>
                                 Remove a session's override: the global default applies again
  audit [--ext <name>] [--session <id>] [--since <when>] [--limit <n>] [--denied]
                                 The invocation ledger and capability audit
        --hooks [--ext <name>] [--session <id>] [--since <when>] [--limit <n>]
                                 Each hook's answer to each event (the hook traces)
  serve [--socket <path> | --port <n>] [--token-file <path>]
                                 Serve the JSON-RPC 2.0 API over WebSocket (docs/api.md)
  mcp --session <id> [--workspace <dir>]
                                 Serve a session's active tools as an MCP server on stdio
  doctor                         Check Deno, the sandbox layers and the store
  help                           Show this help

Options:
  --json        Machine-readable output (every listing)
  --yes         Do not ask for confirmation (scripts)
  --home <dir>  The home folder (default: $TETHER_HOME or ~/.tether)

Environment: TETHER_HOME, TETHER_LOG (debug, info, warn, error), TETHER_DENO,
TETHER_INSECURE_NO_SANDBOX=1, TETHER_JAIL_UID/GID, TETHER_JAIL_ROOT,
TETHER_CGROUP (auto, none, v1, v2), TETHER_NATIVE_DIR, TETHER_OPERATOR.

Exit codes: 0 ok, 1 failed (the message says what to run next), 2 bad usage,
3 not confirmed, 4 the called tool answered an error.`;

const OPTIONS = {
  json: { type: "boolean" },
  yes: { type: "boolean", short: "y" },
  home: { type: "string" },
  only: { type: "string", multiple: true },
  all: { type: "boolean" },
  diff: { type: "boolean" },
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
  help: { type: "boolean", short: "h" },
} satisfies ParseArgsConfig["options"];

class UsageError extends Error {}

function need(positionals: string[], index: number, what: string): string {
  const value = positionals[index];
  if (value === undefined) throw new UsageError(`missing ${what}`);
  return value;
}

async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

/**
 * Runs one command. `env` is the environment it honours (default this process's),
 * read once here: the library below is handed options, never the environment.
 */
export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    console.error(`tether: ${(err as Error).message}. Run 'tether help'`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  const [command, ...args] = positionals;
  const json = values.json === true;
  const out = (value: unknown, text: string) => console.log(json ? JSON.stringify(value, null, 2) : text);

  if (command === undefined || command === "help" || values.help) {
    console.log(HELP);
    return EXIT.ok;
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

  if (command === "doctor") {
    const { runChecks } = await import("./doctor.js");
    const checks = runChecks(options);
    out(checks, checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`).join("\n"));
    return checks.every((c) => c.ok) ? EXIT.ok : EXIT.failed;
  }

  if (command === "serve") {
    const { runServe } = await import("../serve/command.js");
    return runServe({ broker: options, ...defined({ socket: values.socket, port: values.port, tokenFile: values["token-file"] }) });
  }
  if (command === "mcp") {
    const { runMcp } = await import("../mcp/command.js");
    return runMcp({ broker: options, ...defined({ session: values.session, workspace: values.workspace }) });
  }

  if (command === "check") {
    const { runCheck } = await import("./check.js");
    return EXIT[await runCheck(args, options, json)];
  }

  const known = ["install", "review", "approve", "revoke", "uninstall", "list", "call", "session", "audit"];
  if (!known.includes(command)) {
    console.error(`tether: unknown command '${command}'. Run 'tether help'`);
    return EXIT.usage;
  }

  // Usage first: a missing argument never opens (or creates) a home.
  const usage: Record<string, [number, string]> = {
    install: [1, "the extension folder: tether install <dir>"],
    review: [1, "the extension name: tether review <name>"],
    approve: [1, "the extension name: tether approve <name>"],
    revoke: [1, "the extension name: tether revoke <name>"],
    uninstall: [1, "the extension name: tether uninstall <name>"],
    call: [2, "the extension and tool names: tether call <name> <tool> [json]"],
  };
  const needed = usage[command];
  if (needed !== undefined && args.length < needed[0]) {
    console.error(`tether ${command}: missing ${needed[1]}`);
    return EXIT.usage;
  }
  const sessionCli = command === "session" ? await import("./session.js") : null;
  const sessionArgs = sessionCli?.parseSessionArgs(args, values) ?? null;
  if (typeof sessionArgs === "string") {
    console.error(`tether session: ${sessionArgs}`);
    return EXIT.usage;
  }
  const callCli = command === "call" ? await import("./call.js") : null;
  const callArgs = callCli?.parseCallArgs(args, values) ?? null;
  if (typeof callArgs === "string") {
    console.error(`tether call: ${callArgs}`);
    return EXIT.usage;
  }
  if (command === "audit" && values.hooks === true && values.denied === true) {
    console.error("tether audit: --hooks and --denied do not combine: --denied keeps refused capability calls, --hooks lists hook traces");
    return EXIT.usage;
  }

  // Loaded only for commands that use them: help and usage errors stay fast.
  const [{ Broker }, { renderReview }, { queryAudit, renderAudit, queryHookTraces, renderHookTraces, parseLimit, SinceError, LimitError }] = await Promise.all([
    import("../broker.js"),
    import("../registry/review.js"),
    import("./audit.js"),
  ]);
  let broker: Broker | null = null;
  try {
    broker = Broker.open(options);
    const registry = broker.registry;
    switch (command) {
      case "install": {
        const dir = need(args, 0, "the extension folder: tether install <dir>");
        const { runInstall } = await import("./install.js");
        return EXIT[await runInstall(broker, dir, { json, yes: values.yes === true, options, confirm })];
      }
      case "review": {
        const name = need(args, 0, "the extension name: tether review <name>");
        const shown = (await import("./review.js")).reviewOutput(broker, name, values.diff === true);
        out(shown.value, shown.text);
        return EXIT.ok;
      }
      case "approve": {
        const name = need(args, 0, "the extension name: tether approve <name>");
        if (values.all === true && values.only !== undefined) throw new UsageError("--only and --all do not combine: --only grants the rules named, --all every rule requested");
        const { installed, review } = (await import("./review.js")).reviewFor(broker, name);
        if (values.yes !== true) {
          if (!json) console.error(renderReview(review, installed));
          if (!(await confirm(`Approve ${name} ${installed.version}?`))) {
            console.error(process.stdin.isTTY ? "not approved" : "not approved: no terminal to confirm on; pass --yes to approve from a script");
            return EXIT.declined;
          }
        }
        const approval = registry.approve(name, { ...(values.only !== undefined ? { onlyNet: values.only } : {}), all: values.all === true });
        const kept = values.only === undefined && approval.withheldNet.length > 0 ? `; still withheld by an earlier --only: ${approval.withheldNet.join(", ")} (--all grants it)` : "";
        out({ name, approval }, `approved ${name} ${installed.version}${approval.grants.net.length ? ` (egress: ${approval.grants.net.join(", ")}${kept})` : ` (no egress${kept})`}`);
        return EXIT.ok;
      }
      case "revoke": {
        const name = need(args, 0, "the extension name: tether revoke <name>");
        const revoked = registry.revoke(name);
        out({ name, revoked }, revoked ? `revoked ${name}; running satellites stop on their next call` : `${name} had no active approval`);
        return EXIT.ok;
      }
      case "uninstall": {
        const name = need(args, 0, "the extension name: tether uninstall <name>");
        registry.uninstall(name);
        out({ name, uninstalled: true }, `uninstalled ${name}`);
        return EXIT.ok;
      }
      case "list": {
        const rows = registry.list().map((i) => ({ name: i.name, version: i.version, status: registry.status(i), description: i.description }));
        out(rows, rows.length === 0 ? "no extensions installed" : rows.map((r) => `${r.name.padEnd(20)} ${r.version.padEnd(10)} ${r.status.padEnd(9)} ${r.description}`).join("\n"));
        return EXIT.ok;
      }
      case "call": {
        if (callCli === null || callArgs === null) return EXIT.usage;
        const { outcome, notes } = await callCli.runCall(broker, callArgs, (text) => process.stderr.write(`… ${text}\n`));
        for (const note of notes) process.stderr.write(`… note: ${note}\n`);
        if (outcome.ok) {
          out(outcome, outcome.value.content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json))).join("\n"));
          return EXIT.ok;
        }
        if (json) out(outcome, "");
        else console.error(`${outcome.error.code}: ${outcome.error.msg}`);
        return EXIT.callFailed;
      }
      case "session": {
        if (sessionCli === null || sessionArgs === null) return EXIT.usage;
        if (sessionArgs.action === "status") {
          const result = await sessionCli.sessionStatus(broker, sessionArgs.session ?? sessionCli.DEFAULT_SESSION, sessionArgs.workspace);
          for (const note of result.closeNotes) process.stderr.write(`… SessionEnd hook: ${note}\n`);
          out(result.statuses, sessionCli.renderStatus(result.statuses));
          return EXIT.ok;
        }
        const change = sessionCli.changePreference(broker, sessionArgs.action, sessionArgs.extension ?? "", sessionArgs.session);
        out(change, sessionCli.renderChange(change));
        return EXIT.ok;
      }
      case "audit": {
        const filters = {
          ...(values.ext !== undefined ? { extension: values.ext } : {}),
          ...(values.session !== undefined ? { session: values.session } : {}),
          ...(values.since !== undefined ? { since: values.since } : {}),
          ...(values.limit !== undefined ? { limit: parseLimit(values.limit) } : {}),
        };
        if (values.hooks === true) {
          const traces = queryHookTraces(broker.store, filters);
          out(traces, renderHookTraces(traces));
          return EXIT.ok;
        }
        const rows = queryAudit(broker.store, { ...filters, denied: values.denied === true });
        out(rows, renderAudit(rows));
        return EXIT.ok;
      }
    }
    return EXIT.usage;
  } catch (err) {
    if (err instanceof UsageError || err instanceof SinceError || err instanceof LimitError) {
      console.error(`tether ${command}: ${err.message}`);
      return EXIT.usage;
    }
    if (err instanceof TetherError) {
      console.error(`tether ${command}: ${err.message}`);
      return EXIT.failed;
    }
    console.error(`tether ${command}: unexpected failure: ${(err as Error).message}`);
    return EXIT.failed;
  } finally {
    await broker?.close();
  }
}
