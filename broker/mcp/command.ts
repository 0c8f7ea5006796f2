/**
 * `tether mcp --session <id> [--workspace <dir>] [--http <port> [--token-file <path>]]`:
 * the session's active tools as an MCP server on stdio, or over Streamable HTTP
 * on a loopback port (broker/mcp/http.ts; docs/mcp.md).
 *
 * stdout is the MCP channel and nothing else writes there: the broker's log,
 * hooks' notes and this command's own lines go to stderr, and `console.log`
 * is pointed at stderr for as long as the server runs. The server stops when
 * the client closes stdin, or on SIGTERM / SIGINT: the session closes (open
 * calls are cancelled first), then the broker, and the exit code is 0.
 */
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import type { Broker, BrokerOptions } from "../broker.js";
import type { FleetMember, FleetOptions } from "../fleet.js";
import { TetherError } from "../base/errors.js";
import { packageVersion } from "../base/version.js";
import type { Session } from "../sessions/session.js";

export interface McpOptions {
  /** The broker's options (the tether command's --home and environment); its logger writes to stderr. */
  readonly broker?: Omit<BrokerOptions, "log">;
  readonly session?: string;
  readonly workspace?: string;
  /**
   * Told, once the session is open, how to reload it: the session re-reads the
   * approvals and preferences (`Session.reload`) and the client is told its
   * tool list changed. `tether dev --mcp` calls it after each rebuild.
   */
  readonly onOpen?: (reload: () => Promise<void>) => void;
  /** Join this fleet's shared store (docs/fleet.md): approvals and revocations made on any host apply here. */
  readonly fleet?: FleetOptions;
  /** Serve over Streamable HTTP on 127.0.0.1:<port> instead of stdio (the text of --http; "0" picks a port). */
  readonly http?: string;
  /** The bearer token's file for --http (default: <home>/mcp.token). */
  readonly tokenFile?: string;
}

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

const say = (line: string) => process.stderr.write(`tether mcp: ${line}\n`);

/** Points console.log/info/debug at stderr; returns the undo. */
function consoleToStderr(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);
  return () => Object.assign(console, saved);
}

/**
 * What serving over stdio loads: the server and its stdio transport, neither of which
 * loads the MCP SDK or zod (the HTTP path, --http, loads the SDK's transport, and only then).
 */
export const stdioServerModules = () => Promise.all([import("./server.js"), import("./protocol/stdio.js")]);

export async function runMcp(options: McpOptions): Promise<number> {
  if (options.session === undefined || options.session.trim() === "") {
    say(
      "missing --session <id>: the session whose active tools to serve (tether mcp --session <id> [--workspace <dir>])",
    );
    return EXIT_USAGE;
  }
  const { SessionId } = await import("../sessions/session-records.js");
  const id = v.safeParse(SessionId, options.session);
  if (!id.success) {
    say(`--session '${options.session}': ${id.issues[0].message}`);
    return EXIT_USAGE;
  }
  const isFolder = (path: string): boolean => {
    try {
      return statSync(path).isDirectory();
    } catch {
      return false;
    }
  };
  const given = options.workspace !== undefined ? resolve(options.workspace) : null;
  if (given !== null && !isFolder(given)) {
    say(`--workspace '${options.workspace}': not a folder`);
    return EXIT_USAGE;
  }
  let port: number | null = null;
  if (options.http !== undefined) {
    port = /^\d{1,5}$/.test(options.http) ? Number(options.http) : NaN;
    if (!(port >= 0 && port <= 65535)) {
      say(`--http '${options.http}': expected a port, 0 to 65535 (0 picks a free one)`);
      return EXIT_USAGE;
    }
  }
  // Without --workspace: the one the session was last opened with (MCP clients often start
  // servers in /), else the current folder.
  let workspace = given ?? resolve(process.cwd());

  const restoreConsole = consoleToStderr();
  // Listened for from the start: a signal while the satellites boot still closes them cleanly.
  let stop!: (reason: string) => void;
  let stopReason: string | null = null;
  const stopped = new Promise<string>((resolveStop) => {
    stop = (reason) => {
      stopReason ??= reason;
      resolveStop(reason);
    };
  });
  /** Set once the session is open: a second signal while closing aborts instead of waiting. */
  let hurry: (() => void) | null = null;
  const onStdinEnd = () => stop("the client closed stdin");
  // `on`, not `once`, until the end: execa's signal-exit re-raises a signal nobody else listens for.
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopReason === null) stop(signal);
    else hurry?.();
  };
  // The client went away mid-write: nothing more can be said to it.
  const onStdoutError = (err: Error) => stop(`stdout failed (${err.message})`);
  // Over HTTP stdin is not the channel: only a signal stops the server.
  if (port === null) {
    process.stdin.once("end", onStdinEnd);
    process.stdin.once("close", onStdinEnd);
    process.stdout.on("error", onStdoutError);
  }
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  const unlisten = () => {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    process.stdin.off("end", onStdinEnd);
    process.stdin.off("close", onStdinEnd);
    process.stdout.off("error", onStdoutError);
  };
  const [{ Broker }, { Session }, { SessionRecords }, { createLogger }] = await Promise.all([
    import("../broker.js"),
    import("../sessions/session.js"),
    import("../sessions/session-records.js"),
    import("../base/log.js"),
  ]);
  // The MCP server loads while the session's satellites boot, which is mostly waiting on their processes.
  const mcpModules = stdioServerModules();
  mcpModules.catch(() => {}); // Awaited below; a session that fails to open first must not leave it unhandled.

  let broker: Broker | null = null;
  let session: Session | null = null;
  let fleet: FleetMember | null = null;
  try {
    // The logger writes to stderr (its default sink); said explicitly, as stdout is the MCP channel.
    const brokerOptions = options.broker ?? {};
    broker = Broker.open({
      ...brokerOptions,
      log: createLogger({ ...(brokerOptions.logLevel !== undefined ? { level: brokerOptions.logLevel } : {}) }),
    });
    if (options.fleet !== undefined)
      fleet = await (await import("../fleet.js")).FleetMember.join(broker, options.fleet);
    // The session's saved policy is kept (opening with none would widen it back).
    // In a fleet the saved record is the fleet's: leased to this host and pulled first.
    await broker.fleet?.openSession(options.session);
    const record = new SessionRecords(broker.store).get(options.session);
    if (given === null && record !== null && isFolder(record.workspace)) workspace = record.workspace;
    session = await Session.open(broker, {
      id: options.session,
      workspace,
      ...(record !== null ? { policy: record.policy } : {}),
    });
  } catch (err) {
    const code = err instanceof TetherError ? ` (${err.code})` : "";
    say(`could not open session '${options.session}'${code}: ${(err as Error).message}`);
    await session?.destroy().catch(() => {});
    await fleet?.close().catch(() => {});
    await broker?.close().catch(() => {});
    unlisten();
    restoreConsole();
    return EXIT_FAILED;
  }

  const opened = session;
  const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();
  const statuses = opened.status().filter((s) => !s.builtin);
  const active = statuses.filter((s) => s.state === "active");
  const inactive = statuses.filter((s) => s.state !== "active");
  say(
    `session '${opened.id}' in ${workspace}: serving ${opened.tools().length} ` +
      `tool(s) of ${active.map((s) => s.name).join(", ") || "no extension"}` +
      (inactive.length > 0
        ? `; not active: ${inactive.map((s) => `${s.name} (${oneLine(s.reason ?? s.state)})`).join("; ")}`
        : ""),
  );

  let code = EXIT_OK;
  let closeServer: () => Promise<void> = async () => {};
  try {
    if (port === null) {
      const [{ createMcpServer }, { StdioTransport }] = await mcpModules;
      const server = createMcpServer(opened, { version: packageVersion(), onNote: (line) => say(line) });
      server.onerror = (err) => say(`protocol error: ${err.message}`);
      server.onclose = () => stop("the connection closed");
      // Closing the server aborts every open handler's signal: calls in flight end `cancelled`.
      closeServer = () => server.close().catch(() => {});
      // Asked to stop while the session opened: no connection is made.
      if (stopReason === null) await server.connect(new StdioTransport());
    } else {
      const { serveMcpHttp } = await import("./http.js");
      const { loadOrCreateToken } = await import("../base/serve-token.js");
      const { resolveHome } = await import("../store/home.js");
      const tokenFile = resolve(options.tokenFile ?? join(resolveHome(options.broker?.home), "mcp.token"));
      const http = await serveMcpHttp(opened, {
        port,
        token: loadOrCreateToken(tokenFile).token,
        version: packageVersion(),
        onNote: (line) => say(line),
      });
      closeServer = () => http.close();
      // One write: a reader that saw the first line has both.
      process.stderr.write(
        `tether mcp: listening on ${http.url} (Authorization: Bearer <token in ${tokenFile}>)\n` +
          `tether mcp: or, for a client that sends no headers: ${http.capabilityUrl} (a secret, as the token is)\n`,
      );
    }
    options.onOpen?.(async () => {
      const report = await opened.reload();
      for (const failed of report.failed) say(`reload: '${failed.name}' is not active: ${oneLine(failed.reason)}`);
    });
    const reason = await stopped;
    say(`${reason}; closing session '${opened.id}'`);
  } catch (err) {
    say(`failed: ${(err as Error).message}`);
    code = EXIT_FAILED;
  }

  // A second signal while closing: abort instead of waiting for open calls and SessionEnd hooks.
  hurry = () => {
    say("asked again: aborting");
    void opened.destroy().catch(() => {});
  };
  try {
    await closeServer();
    for (const note of await opened.close()) say(`SessionEnd hook: ${note}`);
  } catch (err) {
    say(`closing the session failed: ${(err as Error).message}`);
    code = EXIT_FAILED;
  } finally {
    await fleet?.close().catch(() => {});
    await broker.close().catch((err: unknown) => {
      say(`closing the broker failed: ${(err as Error).message}`);
      code = EXIT_FAILED;
    });
    unlisten();
    // Nothing more is read: the process may exit even if the client keeps stdin open (SIGTERM).
    process.stdin.destroy();
    restoreConsole();
  }
  return code;
}
