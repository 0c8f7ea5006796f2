/**
 * Every command of `tether`, one entry each: its usage lines (shown by
 * `tether help`, checked against the docs by tests/unit/cli-help.test.ts), its
 * help, the options it reads and its `run`, which loads its module only when
 * the command runs (so help and usage errors stay fast).
 */
import { blockText } from "../base/outcome.js";
import { defined } from "../base/defined.js";
import { EXIT, UsageError, confirm, type Command } from "./command.js";
import { KEY, LOGIN, LOGINS, LOGOUT, PROVIDERS, SECRET, STATUS } from "./commands-credentials.js";

// ── the commands ─────────────────────────────────────────────────────────

const OPERATORS = "docs/operators.md";

export const COMMANDS: readonly Command[] = [
  {
    name: "install",
    usage: [
      {
        usage: "install <dir> [--yes]",
        summary: [
          "Validate, bundle, dry-boot and store an extension (pending until",
          "approved); --yes replaces one installed from another folder",
        ],
      },
    ],
    help:
      "Reads <dir>/manifest.toml and checks every field, bundles the entry with esbuild, boots the artifact " +
      "once in the jail to check that it serves what the manifest declares, and stores it in the home. " +
      "A new extension is pending: nothing runs until it is approved. Reinstalling " +
      "after a change makes it 'changed' until approved again. Installing " +
      "another folder under a name already installed asks first (--yes: proceed).",
    options: ["yes", "json"],
    doc: `${OPERATORS}#1-install`,
    needs: [1, "the extension folder: tether install <dir>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const { runInstall } = await import("./install.js");
        return EXIT[
          await runInstall(broker, ctx.args[0]!, {
            json: ctx.json,
            yes: ctx.values.yes === true,
            options: ctx.options,
            confirm,
          })
        ];
      }),
  },
  {
    name: "check",
    usage: [
      {
        usage: "check <dir>",
        summary: [
          "Check a folder before installing it: manifest, bundle, types, and a",
          "dry boot in the jail (served vs declared); every problem at once",
        ],
      },
    ],
    help:
      "Everything install would refuse, a type check (deno check), and a dry boot of the " +
      "bundled artifact in the jail that compares what it serves with what the manifest " +
      "declares — all reported together, each with what to change. Writes nothing to the home.",
    options: ["json"],
    doc: `${OPERATORS}#checking-a-folder-tether-check`,
    run: async (ctx) => {
      const { runCheck } = await import("./check.js");
      return EXIT[await runCheck(ctx.args, ctx.options, ctx.json)];
    },
  },
  {
    name: "review",
    usage: [
      {
        usage: "review <name> [--diff]",
        summary: [
          "What it can reach, its tools, hooks and limits; on an upgrade, the diff",
          "and the source files that changed (--diff: how)",
        ],
      },
    ],
    help:
      "Says in plain words what the installed extension can reach, the tools, hooks and commands it " +
      "adds and its limits; after an upgrade, what changed since the approval (a widening in capitals), " +
      "the artifact's size and hash, and the source files that differ; --diff prints how they differ.",
    options: ["diff", "json"],
    doc: `${OPERATORS}#2-review`,
    needs: [1, "the extension name: tether review <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const shown = (await import("../operator/review.js")).reviewOutput(
          broker,
          ctx.args[0]!,
          ctx.values.diff === true,
        );
        ctx.out(shown.value, shown.text);
        return EXIT.ok;
      }),
  },
  {
    name: "approve",
    usage: [
      {
        usage: "approve <name> [--only <rule>...] [--all] [--yes]",
        summary: [
          "Approve what is installed (narrow egress with --only; a later",
          "approval keeps that narrowing unless --all)",
        ],
      },
    ],
    help:
      "Shows the review on stderr and asks on the terminal; without " +
      "one (a script) it declines, exit 3, unless --yes is given. " +
      "The approval pins the manifest and artifact as installed (its migrations with it: the pending " +
      "ones run on its database first, all or none); --only grants a subset of the requested " +
      "egress rules, and a later approval keeps withholding what it left out unless --all is given. " +
      "An extension with [init] has its initializer run right after, with one " +
      "line on how it went; a failed init leaves the approval standing (exit 0) " +
      "and the extension inactive until it succeeds at a later start of a broker.",
    options: ["only", "all", "yes", "json"],
    doc: `${OPERATORS}#3-approve`,
    needs: [1, "the extension name: tether approve <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const { renderReview } = await import("../registry/review.js");
        const name = ctx.args[0]!;
        if (ctx.values.all === true && ctx.values.only !== undefined)
          throw new UsageError(
            "--only and --all do not combine: --only grants the rules named, --all every rule requested",
          );
        const { installed, review } = (await import("../operator/review.js")).reviewFor(broker, name);
        if (ctx.values.yes !== true) {
          if (!ctx.json) console.error(renderReview(review, installed));
          if (!(await confirm(`Approve ${name} ${installed.version}?`))) {
            console.error(
              process.stdin.isTTY
                ? "not approved"
                : "not approved: no terminal to confirm on; pass --yes to approve from a script",
            );
            return EXIT.declined;
          }
        }
        const only = ctx.values.only as string[] | undefined;
        const progress = (line: string) => void (ctx.json ? undefined : process.stderr.write(`… ${line}\n`));
        const { approveExtension } = await import("../operator/approve.js");
        const done = await approveExtension(broker, name, {
          ...(only !== undefined ? { only } : {}),
          all: ctx.values.all === true,
          progress,
        });
        ctx.out({ name, approval: done.approval, ...(done.init !== undefined ? { init: done.init } : {}) }, done.text);
        return EXIT.ok;
      }),
  },
  {
    name: "revoke",
    usage: [{ usage: "revoke <name>", summary: ["Revoke the approval; running satellites stop on their next call"] }],
    help:
      "Stamps the current approval revoked: calls are refused from then on, and " +
      "satellites already running stop at their next call. The history stays.",
    options: ["json"],
    doc: `${OPERATORS}#7-revoke`,
    needs: [1, "the extension name: tether revoke <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const { revokeExtension } = await import("../operator/revoke.js");
        const { name, revoked, text } = revokeExtension(broker, ctx.args[0]!);
        ctx.out({ name, revoked }, text);
        return EXIT.ok;
      }),
  },
  {
    name: "uninstall",
    usage: [{ usage: "uninstall <name>", summary: ["Remove an extension (its approval is revoked)"] }],
    help:
      "Revokes the approval and removes the install. The approval history and the " +
      "ledger stay; installing the name again needs a new approval. What it stored " +
      "(kv, skv, its [storage] database) stays and is listed; --purge removes it.",
    options: ["purge", "json"],
    doc: `${OPERATORS}#8-uninstall`,
    needs: [1, "the extension name: tether uninstall <name>"],
    run: (ctx) =>
      ctx.withBroker(async (broker) => {
        const { runUninstall } = await import("../operator/uninstall.js");
        const { result, text } = await runUninstall(broker, ctx.args[0]!, ctx.values.purge === true);
        ctx.out(result, text);
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
        const rows = registry
          .list()
          .map((i) => ({ name: i.name, version: i.version, status: registry.status(i), description: i.description }));
        ctx.out(
          rows,
          rows.length === 0
            ? "no extensions installed"
            : rows
                .map((r) => `${r.name.padEnd(20)} ${r.version.padEnd(10)} ${r.status.padEnd(9)} ${r.description}`)
                .join("\n"),
        );
        return EXIT.ok;
      }),
  },
  STATUS,
  SECRET,
  KEY,
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
      "The JSON arguments (default {}) are one word: quote them. Arguments that are " +
      "not JSON are refused before anything opens (exit 2), naming the line and column. " +
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
        // The call's own answer first, then what hooks said about it.
        const sayNotes = () => {
          for (const note of notes) process.stderr.write(`… note: ${note}\n`);
        };
        if (outcome.ok) {
          ctx.out(outcome, outcome.value.content.map(blockText).join("\n"));
          sayNotes();
          return EXIT.ok;
        }
        if (ctx.json) ctx.out(outcome, "");
        else console.error(`${outcome.error.code}: ${outcome.error.msg}`);
        sayNotes();
        return EXIT.callFailed;
      });
    },
  },
  {
    name: "session",
    usage: [
      {
        usage: "session status [--session <id>] [--workspace <dir>]",
        summary: ["Open a session here (real boots): each extension's state and why"],
      },
      { usage: "session enable <name> [--session <id>]" },
      {
        usage: "session disable <name> [--session <id>]",
        summary: [
          "Turn an extension on or off: the global default, or one session's",
          "override (a live session applies it on reload)",
        ],
      },
      {
        usage: "session reset <name> --session <id>",
        summary: ["Remove a session's override: the global default applies again"],
      },
      { usage: "session folds <id>", summary: ["What compaction strategies folded in a session, by compaction"] },
      {
        usage: "session release --host <name>",
        summary: [
          "A fleet's host is dead: end its sessions' leases now (they open",
          "elsewhere at once; its running calls are marked lost)",
        ],
      },
    ],
    help:
      "status opens the session in this process (real boots, default id: default) and prints " +
      "each extension's state and why, then the context its loaders and preparations " +
      "composed; enable, disable and reset write the saved preferences; folds reads the store.",
    options: [
      ["session", "The session (status: default 'default'; else without it: the global default)"],
      "workspace",
      "host",
      "json",
    ],
    doc: `${OPERATORS}#sessions`,
    run: async (ctx) => {
      if (ctx.args[0] === "release") {
        const { releaseHost } = await import("./session-release.js");
        return ctx.withBroker(async (broker) => {
          const shown = await releaseHost(broker, ctx.args.slice(1), ctx.values.host as string | undefined);
          ctx.out(shown.value, shown.text);
          return EXIT.ok;
        });
      }
      const sessionCli = await import("./session.js");
      const parsed = sessionCli.parseSessionArgs(
        ctx.args,
        ctx.values as Parameters<typeof sessionCli.parseSessionArgs>[1],
      );
      if (typeof parsed === "string") throw new UsageError(parsed);
      return ctx.withBroker(async (broker) => {
        if (parsed.action === "folds") {
          const { renderFolds, sessionFolds } = await import("./session-folds.js");
          const folds = sessionFolds(broker, parsed.session ?? "");
          ctx.out(folds, renderFolds(parsed.session ?? "", folds));
          return EXIT.ok;
        }
        if (parsed.action === "status") {
          const result = await sessionCli.sessionStatus(
            broker,
            parsed.session ?? sessionCli.DEFAULT_SESSION,
            parsed.workspace,
          );
          for (const note of result.closeNotes) process.stderr.write(`… SessionEnd hook: ${note}\n`);
          ctx.out(
            result.statuses,
            `${sessionCli.renderStatus(result.statuses)}${sessionCli.renderContext(result.context)}`,
          );
          return EXIT.ok;
        }
        const change = sessionCli.changePreference(broker, parsed.action, parsed.extension ?? "", parsed.session);
        ctx.out(change, sessionCli.renderChange(change));
        return EXIT.ok;
      });
    },
  },
  PROVIDERS,
  {
    name: "audit",
    usage: [
      {
        usage: "audit [--ext <name>] [--session <id>] [--since <when>] [--limit <n>] [--denied]",
        summary: ["The invocation ledger and capability audit"],
      },
      {
        usage: "audit --hooks [--ext <name>] [--session <id>] [--since <when>] [--limit <n>]",
        summary: ["Each hook's answer to each event (the hook traces)"],
      },
    ],
    help:
      "Oldest first, at most the newest 1000 rows of each table; the " +
      "filters combine with AND. --denied and --hooks do not combine.",
    options: [
      "ext",
      ["session", "Only this session's rows (cli for tether call)"],
      "since",
      "limit",
      "denied",
      "hooks",
      "json",
    ],
    doc: `${OPERATORS}#9-audit`,
    run: async (ctx) => {
      const { queryAudit, renderAudit, queryHookTraces, renderHookTraces, parseSince, SinceError } = await import(
        "../operator/audit.js"
      );
      const { parseLimit, LimitError } = await import("./audit.js");
      const v = ctx.values;
      if (v.hooks === true && v.denied === true) {
        throw new UsageError(
          "--hooks and --denied do not combine: --denied keeps refused capability calls, --hooks lists hook traces",
        );
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
    usage: [
      {
        usage: "logs <name> [-f] [--lines <n>]",
        summary: [
          "An extension's log: its satellites' stderr and the broker's lines",
          "about it (<home>/logs/<name>.log); -f follows",
        ],
      },
    ],
    help:
      "Every broker on the home (tether call, serve, mcp, a harness) appends to it, " +
      "whatever TETHER_LOG says: what the extension's satellites wrote to stderr and stdout, " +
      "its log capability's lines, and what the broker logged about it (a failed boot, a bound " +
      "that stopped it). Each file is kept under 1 MiB, the one before it as <name>.log.1.",
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
    usage: [
      {
        usage: "serve [--socket <path> | --port <n> [--pages-port <n>]] [--token-file <path>]",
        summary: ["Serve the JSON-RPC 2.0 API over WebSocket (docs/api.md)"],
      },
    ],
    help:
      "Runs until SIGTERM or SIGINT: in-flight calls finish, sessions close, exit 0. Clients " +
      "authenticate with the bearer token in the token file (made with mode 0600 on first run).",
    options: ["socket", "port", "pages-port", "token-file"],
    doc: `${OPERATORS}#tether-serve`,
    run: async (ctx) => {
      const { runServe } = await import("../tether-serve/command.js");
      const v = ctx.values as { socket?: string; port?: string; "pages-port"?: string; "token-file"?: string };
      const { fleetOptionsOf } = await import("./fleet-join.js");
      const fleet = fleetOptionsOf(ctx.options);
      return runServe({
        broker: ctx.options,
        ...defined({ socket: v.socket, port: v.port, pagesPort: v["pages-port"], tokenFile: v["token-file"] }),
        ...(fleet !== null ? { fleet } : {}),
      });
    },
  },
  {
    name: "mcp",
    usage: [
      {
        usage: "mcp --session <id> [--workspace <dir>]",
        summary: ["Serve a session's active tools as an MCP server on stdio"],
      },
      {
        usage: "mcp --session <id> --http <port> [--token-file <path>] [--workspace <dir>]",
        summary: ["The same over Streamable HTTP on 127.0.0.1:<port>; each request", "carries the bearer token"],
      },
    ],
    help:
      "On stdio, stdout is the MCP channel; everything else goes to stderr. Stops when the client " +
      "closes stdin, or on SIGTERM/SIGINT. Over --http, every request needs the token (its file is " +
      "made with mode 0600 on first run), a loopback Host and no other site's Origin; it stops on " +
      "SIGTERM/SIGINT. Registering it with a client: docs/mcp.md.",
    options: [
      ["session", "The session whose active tools to serve (required)"],
      "workspace",
      "http",
      ["token-file", "The bearer token's file for --http (default: <home>/mcp.token)"],
    ],
    doc: `${OPERATORS}#tether-mcp`,
    run: async (ctx) => {
      const { runMcp } = await import("../mcp/command.js");
      const v = ctx.values as { session?: string; workspace?: string; http?: string; "token-file"?: string };
      const fleet = (await import("./fleet-join.js")).fleetOptionsOf(ctx.options);
      return runMcp({
        broker: ctx.options,
        ...defined({ session: v.session, workspace: v.workspace, http: v.http, tokenFile: v["token-file"] }),
        ...(fleet !== null ? { fleet } : {}),
      });
    },
  },
  {
    name: "dev",
    usage: [
      {
        usage: "dev <folder> [--home <dir>] [--yes-widen] [--serve | --mcp]",
        summary: [
          "Develop an extension: install and approve it in a dev home of its",
          "own; rebuild, re-approve and serve it on every change",
        ],
      },
    ],
    help:
      "The dev home is never the operator's: by default " +
      "$XDG_STATE_HOME/tether-dev/<name> (~/.local/state/tether-dev/<name>). " +
      "The first build there is approved for exactly what the manifest requests; " +
      "a later change is re-approved by itself when it reaches no further " +
      "(no new egress rule or hook, no raised limit). One that does " +
      "stops with the diff and asks, on the terminal, unless --yes-widen. " +
      "Try it with tether call --home <dev home>; --serve and --mcp serve the dev home while it runs (Ctrl-C stops).",
    options: [
      ["home", "The dev home (default: $XDG_STATE_HOME/tether-dev/<name>), never the operator's"],
      "yes-widen",
      "serve",
      "socket",
      "port",
      "pages-port",
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
  LOGIN,
  LOGOUT,
  LOGINS,
  {
    name: "new",
    usage: [
      {
        usage: "new <name> [--dir <folder>]",
        summary: ["Scaffold an extension (manifest, a tool, a hook, deno tests, the SDK)"],
      },
    ],
    help:
      "Writes a new extension folder: manifest.toml, index.ts with one tool and one hook, deno tests on the " +
      "SDK's test kit, deno.json, and the SDK in its node_modules. `deno test` passes in it at once, and " +
      "`tether install` accepts it. Refuses a name the manifest would refuse and a folder that is not empty.",
    options: ["dir"],
    doc: "docs/authors.md#tether-new",
    run: async (ctx) => (await import("./new.js")).runNew(ctx.args, ctx.values.dir as string | undefined),
  },
  {
    name: "doctor",
    usage: [
      {
        usage: "doctor [--store <url>]",
        summary: [
          "Check Deno, the sandbox layers and the store (with --store, the",
          "fleet's shared PostgreSQL store too)",
        ],
      },
    ],
    help:
      "Checks that Deno runs, that bubblewrap can make namespaces, each jail layer, that the store " +
      "opens with every migration applied, the home's mode, hooks.json and the socket folders. " +
      "With --store postgres://… (or TETHER_STORE): that the shared store answers, its " +
      "migrations (applied at open), and clock skew, this host's against the server's and " +
      "between the hosts it has seen. Exit 1 when any fails; each failure says how to fix it.",
    options: ["store", "json"],
    doc: `${OPERATORS}#doctor`,
    run: async (ctx) => {
      const { runChecks } = await import("./doctor.js");
      const { resolveHome } = await import("../store/home.js");
      const checks = runChecks(ctx.options);
      // The fleet's store, from --store or TETHER_STORE, checked as this host's name in it.
      const url = ctx.options.store;
      if (url !== undefined)
        checks.push(
          await (await import("./doctor-store.js")).storeCheck(
            url,
            ctx.options.fleetHost,
            resolveHome(ctx.options.home),
          ),
        );
      const p = ctx.paint;
      ctx.out(checks, checks.map((c) => `${c.ok ? p.green("ok  ") : p.red("FAIL")} ${c.name}: ${c.detail}`).join("\n"));
      return checks.every((c) => c.ok) ? EXIT.ok : EXIT.failed;
    },
  },
  {
    name: "help",
    usage: [
      { usage: "help [<command>]", summary: ["Show this help, or one command's (also: tether <command> --help)"] },
    ],
    help: "Without a command, the list of commands; with one, its usage, options and where the docs say more.",
    options: [],
    doc: `${OPERATORS}#the-command`,
    run: async (ctx) => {
      const topic = ctx.args[0];
      if (topic === undefined) {
        console.log(ctx.help.overview());
        return EXIT.ok;
      }
      const text = ctx.help.command(topic);
      if (text === null) throw new UsageError(ctx.help.unknown(topic));
      console.log(text);
      return EXIT.ok;
    },
  },
];
