/**
 * `tether serve [--socket <path> | --port <n> [--pages-port <n>]] [--token-file <path>]`: the
 * JSON-RPC 2.0 API over a WebSocket (docs/api.md), until SIGTERM or SIGINT.
 *
 * Prints one line on start — where it listens and where the token is — and
 * exits 0 after a clean shutdown; 1 when it cannot start, 2 for bad usage.
 */
import { join, resolve } from "node:path";
import { Broker, type BrokerOptions } from "../broker.js";
import type { FleetMember, FleetOptions } from "../fleet.js";
import { createLogger } from "../base/log.js";
import { resolveHome } from "../store/home.js";
import { runPendingInits } from "../init/init-lines.js";
import { ServeServer } from "./serve-server.js";
import { TokenFileError, loadOrCreateToken } from "../base/serve-token.js";
import { ListenError, pagesWhereFor, type Where } from "../serve/transport.js";

export interface ServeCommandOptions {
  /** The broker's options (the tether command's --home and environment). */
  readonly broker?: Omit<BrokerOptions, "log">;
  readonly socket?: string;
  readonly port?: string;
  /** The extension pages' port (default: a free one beside --port; docs/services.md). */
  readonly pagesPort?: string;
  readonly tokenFile?: string;
  /**
   * Join this fleet's shared store (docs/fleet.md): its approvals
   * and revocations apply here as they are made on any host.
   */
  readonly fleet?: FleetOptions;
}

const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Where extension pages listen, or a usage error. */
function pagesWhereOf(options: ServeCommandOptions, where: Where): Where | string {
  if (options.pagesPort === undefined) return pagesWhereFor(where);
  const port = /^\d{1,5}$/.test(options.pagesPort) ? Number(options.pagesPort) : NaN;
  if (!(port >= 0 && port <= 65535))
    return `--pages-port takes a port number 0-65535 (0 picks a free one), not '${options.pagesPort}'`;
  if (port !== 0 && "port" in where && port === where.port)
    return "--pages-port must differ from --port: extension pages never share the console's origin";
  return { port };
}

/** Where to listen, or a usage error. */
function whereOf(options: ServeCommandOptions, home: string): Where | string {
  if (options.socket !== undefined && options.port !== undefined)
    return "--socket and --port do not combine: choose one";
  if (options.port !== undefined) {
    const port = /^\d{1,5}$/.test(options.port) ? Number(options.port) : NaN;
    if (!(port >= 0 && port <= 65535))
      return `--port takes a port number 0-65535 (0 picks a free one), not '${options.port}'`;
    return { port };
  }
  if (options.pagesPort !== undefined)
    return "--pages-port goes with --port (beside --socket, pages listen on <socket>-pages.sock)";
  if (options.socket !== undefined && options.socket.trim() === "") return "--socket takes a path";
  return { socket: resolve(options.socket ?? join(home, "tether.sock")) };
}

export async function runServe(options: ServeCommandOptions): Promise<number> {
  const brokerOptions = options.broker ?? {};
  const home = resolveHome(brokerOptions.home);
  const where = whereOf(options, home);
  const pagesWhere = typeof where === "string" ? where : pagesWhereOf(options, where);
  if (typeof where === "string" || typeof pagesWhere === "string") {
    console.error(`tether serve: ${typeof where === "string" ? where : pagesWhere}. Run 'tether help'`);
    return EXIT.usage;
  }
  const tokenFile = resolve(options.tokenFile ?? join(home, "serve.token"));
  const log = createLogger({ ...(brokerOptions.logLevel !== undefined ? { level: brokerOptions.logLevel } : {}) });

  let broker: Broker;
  try {
    broker = Broker.open({ ...brokerOptions, home, log });
  } catch (err) {
    console.error(`tether serve: cannot open the home ${home}: ${(err as Error).message}`);
    return EXIT.failed;
  }
  let fleet: FleetMember | null = null;
  if (options.fleet !== undefined) {
    try {
      fleet = await (await import("../fleet.js")).FleetMember.join(broker, options.fleet);
    } catch (err) {
      await broker.close();
      console.error(
        `tether serve: cannot join the fleet's store: ${(err as Error).message} ` +
          `(check --store or TETHER_STORE, and tether doctor --store)`,
      );
      return EXIT.failed;
    }
  }
  let server: ServeServer;
  let url: string;
  let pages: string;
  try {
    const { token } = loadOrCreateToken(tokenFile);
    server = new ServeServer({ broker, token, log });
    ({ url, pages } = await server.listen(where, pagesWhere));
  } catch (err) {
    await fleet?.close();
    await broker.close();
    const known = err instanceof TokenFileError || err instanceof ListenError;
    console.error(`tether serve: ${known ? "" : "cannot start: "}${(err as Error).message}`);
    return EXIT.failed;
  }

  // The first signal shuts down gracefully; a second one hurries it.
  let hurry: () => void = () => {};
  const hurried = new Promise<void>((resolve) => (hurry = resolve));
  let stopping: (() => void) | null = null;
  const stop = new Promise<void>((resolve) => (stopping = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping !== null) {
      process.stderr.write(`tether serve: ${signal}: shutting down\n`);
      const once = stopping;
      stopping = null;
      once();
    } else {
      process.stderr.write(`tether serve: ${signal} again: not waiting any longer\n`);
      hurry();
    }
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  // The start lines go out in one write, so a reader that saw the first has them all.
  const start = [
    `tether serve: listening on ${url} (token file: ${tokenFile})` +
      (fleet !== null ? ` as host ${fleet.host} of the fleet at ${fleet.shown}` : ""),
  ];
  // The operator console (docs/console.md) is on the same listener; a browser reaches a loopback port.
  if (url.startsWith("ws://")) {
    const http = url.replace(/^ws:/, "http:");
    start.push(`tether serve: the operator console is at ${http}/console/ (sign in with the token)`);
    // MCP clients attach to sessions opened here (docs/mcp.md, "Under tether serve").
    start.push(
      `tether serve: MCP for the sessions opened here is at ${http}/mcp/<session> (Authorization: Bearer <token>)`,
    );
  }
  // Extension pages ([[service]] routes) on a listener of their own: never the console's origin.
  start.push(`tether serve: extension pages are at ${pages}/ext/<name>/… (the same token)`);
  process.stdout.write(`${start.join("\n")}\n`);
  // Initializers ([init]) of approved versions not yet initialized, one line each; calls meanwhile wait for theirs.
  void runPendingInits(broker, (line) => process.stderr.write(`tether serve: ${line}\n`));
  await stop;
  try {
    await server.shutdown(hurried);
  } finally {
    // After the sessions closed (each shipped its state and let its lease go).
    await fleet?.close();
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
  // Everything is closed; should a stray handle keep the loop alive, do not hang on it.
  setTimeout(() => process.exit(process.exitCode ?? EXIT.ok), 2_000).unref();
  return EXIT.ok;
}
