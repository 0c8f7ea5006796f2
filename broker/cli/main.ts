/**
 * The `tether` command line: the operator's review/approve workflow, calls,
 * the audit trail and doctor.
 */
import { createInterface } from "node:readline/promises";
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { Broker } from "../broker.js";
import { TetherError } from "../errors.js";

export const EXIT = { ok: 0, failed: 1, usage: 2, declined: 3, callFailed: 4 } as const;

export const HELP = `tether — run untrusted agent extensions in jailed Deno satellites

Usage: tether <command> [options]

Commands:
  install <dir>                  Validate, bundle and store an extension (pending until approved)
  review <name>                  What it can reach, its tools, hooks and limits; on an upgrade, the diff
  approve <name> [--only <rule>...] [--yes]
                                 Approve what is installed (narrow egress with --only)
  revoke <name>                  Revoke the approval; running satellites stop on their next call
  uninstall <name>               Remove an extension (its approval is revoked)
  list                           Installed extensions: pending / approved / revoked / changed
  call <name> <tool> [json]      Call a tool once and print the answer (partials on stderr)
  audit [--ext <name>] [--session <id>] [--since <when>] [--denied]
                                 The invocation ledger and capability audit
  doctor                         Check Deno, the sandbox layers and the store
  help                           Show this help

Options:
  --json        Machine-readable output (every listing)
  --yes         Do not ask for confirmation (scripts)
  --home <dir>  The home folder (default: $TETHER_HOME or ~/.tether)

Exit codes: 0 ok, 1 failed (the message says what to run next), 2 bad usage,
3 not confirmed, 4 the called tool answered an error.`;

const OPTIONS = {
  json: { type: "boolean" },
  yes: { type: "boolean", short: "y" },
  home: { type: "string" },
  only: { type: "string", multiple: true },
  ext: { type: "string" },
  session: { type: "string" },
  since: { type: "string" },
  denied: { type: "boolean" },
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

export async function main(argv: readonly string[]): Promise<number> {
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
  if (command === "doctor") {
    const { runChecks } = await import("./doctor.js");
    const checks = runChecks(values.home);
    out(checks, checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`).join("\n"));
    return checks.every((c) => c.ok) ? EXIT.ok : EXIT.failed;
  }

  const known = ["install", "review", "approve", "revoke", "uninstall", "list", "call", "audit"];
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

  // Loaded only for commands that use them: help and usage errors stay fast.
  const [{ Broker }, { buildReview, renderReview }, { queryAudit, renderAudit, SinceError }] = await Promise.all([
    import("../broker.js"),
    import("../registry/review.js"),
    import("./audit.js"),
  ]);
  let broker: Broker | null = null;
  try {
    broker = Broker.open(values.home !== undefined ? { home: values.home } : {});
    const registry = broker.registry;
    switch (command) {
      case "install": {
        const dir = need(args, 0, "the extension folder: tether install <dir>");
        const { installed, status } = await registry.install(dir, (line) => {
          if (!json) process.stderr.write(`… ${line}\n`);
        });
        out(
          { name: installed.name, version: installed.version, status, manifestHash: installed.manifestHash, artifactHash: installed.artifactHash },
          `installed ${installed.name} ${installed.version}: ${status}` +
            (status === "approved" ? "" : `\nNext: tether review ${installed.name}, then tether approve ${installed.name}`),
        );
        return EXIT.ok;
      }
      case "review": {
        const name = need(args, 0, "the extension name: tether review <name>");
        const installed = registry.require(name);
        const review = buildReview(installed, registry.status(installed), registry.latestApproval(name));
        out(review, renderReview(review, installed));
        return EXIT.ok;
      }
      case "approve": {
        const name = need(args, 0, "the extension name: tether approve <name>");
        const installed = registry.require(name);
        const review = buildReview(installed, registry.status(installed), registry.latestApproval(name));
        if (values.yes !== true) {
          if (!json) console.error(renderReview(review, installed));
          if (!(await confirm(`Approve ${name} ${installed.version}?`))) {
            console.error(process.stdin.isTTY ? "not approved" : "not approved: no terminal to confirm on; pass --yes to approve from a script");
            return EXIT.declined;
          }
        }
        const approval = registry.approve(name, values.only !== undefined ? { onlyNet: values.only } : {});
        out({ name, approval }, `approved ${name} ${installed.version}${approval.grants.net.length ? ` (egress: ${approval.grants.net.join(", ")})` : " (no egress)"}`);
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
        const name = need(args, 0, "the extension name: tether call <name> <tool> [json]");
        const tool = need(args, 1, "the tool name: tether call <name> <tool> [json]");
        const outcome = await broker.callTool(name, tool, args[2] ?? "{}", {
          session: values.session ?? "cli",
          onReport: (text) => process.stderr.write(`… ${text}\n`),
        });
        if (outcome.ok) {
          const value = outcome.value as { content: Array<{ type: string; text?: string; json?: unknown }> };
          out(outcome, value.content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json))).join("\n"));
          return EXIT.ok;
        }
        if (json) out(outcome, "");
        else console.error(`${outcome.error.code}: ${outcome.error.msg}`);
        return EXIT.callFailed;
      }
      case "audit": {
        const rows = queryAudit(broker.store, {
          ...(values.ext !== undefined ? { extension: values.ext } : {}),
          ...(values.session !== undefined ? { session: values.session } : {}),
          ...(values.since !== undefined ? { since: values.since } : {}),
          denied: values.denied === true,
        });
        out(rows, renderAudit(rows));
        return EXIT.ok;
      }
    }
    return EXIT.usage;
  } catch (err) {
    if (err instanceof UsageError || err instanceof SinceError) {
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
