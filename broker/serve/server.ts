/**
 * `tether serve`'s server: the library's Session API as JSON-RPC 2.0 over a
 * WebSocket (docs/api.md), and two HTTP listeners whose plain requests go to
 * the routes mounted on them (tether-serve.ts mounts the console and the
 * extension pages).
 *
 *   HTTP upgrade ─► token? (401, no socket) ─► room? (503) ─► Connection
 *   HTTP under a route mounted on "api" ─► its handler; anything else ─► 426
 *   pages listener: HTTP under a route mounted on "pages" ─► its handler; anything else ─► 404
 *   Connection ─► handle(method, params) ─► the server's sessions ─► Session
 *
 * **Sessions belong to the server**, not to the connection that opened them:
 * any authorised client may use a session by its id, and a client that
 * reconnects finds its session (and its warm satellites) where it left it.
 * A session ends with `session.close` / `session.destroy`, or at shutdown.
 * **Requests belong to their connection**: when a client goes away, its
 * requests in flight are cancelled (the tool calls end `cancelled`).
 *
 * **Extension pages never share the console's origin**: they get a listener
 * of their own (another port, or another socket), "pages", beside the API's,
 * "api" (docs/services.md#pages-and-the-console).
 */
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import type { Broker } from "../broker.js";
import type { Logger } from "../base/log.js";
import { Session, type HarnessEvent, type HarnessPayload } from "../sessions/session.js";
import { Connection, DEFAULT_LIMITS, type Handler, type RequestContext, type ServeLimits } from "./connection.js";
import {
  RpcCode,
  RpcFailure,
  ServeCode,
  checkPayload,
  compactToWire,
  completionToWire,
  composedToWire,
  foldToWire,
  reportToWire,
  routeToWire,
  unknownSession,
  type Method,
  type ParamsOf,
} from "./protocol.js";
import { loginsOf } from "../login/logins.js";
import { PendingLogins } from "./logins.js";
import { bearerMatches } from "../base/serve-token.js";
import { plainText } from "./plain-text.js";
import { listen, pagesWhereFor, removeSocket, type Listening, type Where } from "./transport.js";
import { searchProvidersToWire, searchReportToWire } from "./search-wire.js";

/** Where the server listens: the API and the console, and the extension pages' own listener. */
export interface ServeListening extends Listening {
  /** The extension pages' base (`http://127.0.0.1:<port>` or `http+unix:<path>`): `<pages>/ext/<name>/…`. */
  readonly pages: string;
}

interface SessionEntry {
  readonly workspace: string;
  readonly ready: Promise<Session>;
  /** The session once it opened (the console lists only these). */
  opened: Session | null;
}

export interface ApiServerOptions {
  readonly broker: Broker;
  readonly token: string;
  readonly log: Logger;
  readonly limits?: Partial<ServeLimits>;
  /** Where the server's own lines go (shutdown progress). */
  readonly say?: (line: string) => void;
}

/** Which listener a route is mounted on: the API's (and the console's), or the extension pages' own. */
export type ListenerName = "api" | "pages";

/** Answers one plain HTTP request under its route's prefix. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

interface Route {
  readonly prefix: string;
  readonly handler: RouteHandler;
}

/**
 * Something that runs while the server listens (the sign-in
 * refresher): started once both listeners are up, stopped at shutdown.
 */
export interface Companion {
  start(): void;
  stop(): Promise<void>;
}

/**
 * Whether `url` is under `prefix`: the path itself, its query, or
 * below it (`/console`: `/console`, `/console?…`, `/console/…`).
 */
function isUnder(url: string, prefix: string): boolean {
  return url === prefix || url.startsWith(prefix.endsWith("/") ? prefix : `${prefix}/`) || url.startsWith(`${prefix}?`);
}

function textOf(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

/**
 * True when `promise` settles within `ms`; false after `ms` or as
 * soon as `early` settles (the timer never holds the process).
 */
function within(promise: Promise<unknown>, ms: number, early: Promise<unknown>): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    timer.unref();
    const done = (value: boolean) => {
      clearTimeout(timer);
      resolve(value);
    };
    promise.then(
      () => done(true),
      () => done(true),
    );
    early.then(
      () => done(false),
      () => done(false),
    );
  });
}

export class ApiServer implements Handler {
  readonly #broker: Broker;
  readonly #token: string;
  readonly #log: Logger;
  readonly #limits: ServeLimits;
  readonly #say: (line: string) => void;
  readonly #http: HttpServer;
  /** Answers `/ext/` only: the extension pages' own origin. */
  readonly #pagesHttp: HttpServer;
  readonly #wss: WebSocketServer;
  readonly #connections = new Map<WebSocket, Connection>();
  readonly #sessions = new Map<string, SessionEntry>();
  #accepting = true;
  #pending = 0;
  #idle: Array<() => void> = [];
  #listening: Listening | null = null;
  #pagesListening: Listening | null = null;
  readonly #pendingLogins: PendingLogins;
  readonly #routes: Record<ListenerName, Route[]> = { api: [], pages: [] };
  readonly #companions: Companion[] = [];

  constructor(options: ApiServerOptions) {
    this.#broker = options.broker;
    this.#token = options.token;
    this.#log = options.log;
    this.#limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.#say = options.say ?? ((line) => process.stderr.write(`${line}\n`));
    this.#pendingLogins = new PendingLogins(loginsOf(this.#broker));
    this.#http = createServer((req, res) => {
      if (this.#route("api", req, res)) return;
      // Other plain HTTP gets nothing but a pointer to the protocol.
      res.writeHead(426, { "content-type": "text/plain", connection: "close", upgrade: "websocket" });
      res.end("tether serve speaks JSON-RPC 2.0 over a WebSocket; see docs/api.md\n");
    });
    this.#pagesHttp = createServer((req, res) => {
      if (this.#route("pages", req, res)) return;
      plainText(res, 404, "Not found\n");
    });
    this.#pagesHttp.on("upgrade", (_req: IncomingMessage, socket: Duplex) => socket.destroy());
    this.#pagesHttp.on("clientError", (_err, socket) => socket.destroy());
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.#limits.maxPayload,
      perMessageDeflate: false,
      clientTracking: false,
    });
    this.#http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => this.#upgrade(req, socket, head));
    this.#http.on("clientError", (_err, socket) => socket.destroy());
  }

  get accepting(): boolean {
    return this.#accepting;
  }

  /** The API listener's loopback port, once it listens on one (null on a Unix socket). */
  get apiPort(): number | null {
    const m = /^ws:\/\/127\.0\.0\.1:(\d+)$/.exec(this.#listening?.url ?? "");
    return m === null ? null : Number(m[1]);
  }

  /** The extension pages' listener (`http://127.0.0.1:<port>` or `http+unix:<path>`), once it listens. */
  get pagesUrl(): string | null {
    return this.#pagesListening?.url ?? null;
  }

  /**
   * Hands the plain HTTP requests under `prefix` on `listener`
   * to `handler`; the first route mounted that matches answers.
   */
  mount(listener: ListenerName, prefix: string, handler: RouteHandler): void {
    this.#routes[listener].push({ prefix, handler });
  }

  /** Runs `companion` while the server listens. */
  alongside(companion: Companion): void {
    this.#companions.push(companion);
  }

  /** Whether a route mounted on `listener` took the request. */
  #route(listener: ListenerName, req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? "";
    const route = this.#routes[listener].find((r) => isUnder(url, r.prefix));
    if (route === undefined) return false;
    void route.handler(req, res);
    return true;
  }

  /**
   * Starts listening: the API and the console at `where`, the extension pages at
   * `pages` (default: another free port beside a port, a `-pages` socket beside a socket).
   */
  async listen(where: Where, pages: Where = pagesWhereFor(where)): Promise<ServeListening> {
    this.#listening = await listen(this.#http, where);
    try {
      this.#pagesListening = await listen(this.#pagesHttp, pages, "http");
    } catch (err) {
      this.#http.close();
      removeSocket(this.#listening.socket);
      throw err;
    }
    for (const companion of this.#companions) companion.start();
    return { ...this.#listening, pages: this.#pagesListening.url };
  }

  // ── connections ─────────────────────────────────────────────────────────

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => {});
    const refuse = (status: string, body: string, extra = "") => {
      socket.end(
        `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: ` +
          `text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`,
      );
    };
    if (!this.#accepting) return refuse("503 Service Unavailable", "tether serve is shutting down\n");
    // Checked before anything else about the request: an unauthorised client learns nothing and gets no socket.
    if (!bearerMatches(req.headers.authorization, this.#token)) {
      this.#log.info("tether serve: refused an upgrade without a valid bearer token");
      return refuse(
        "401 Unauthorized",
        "a valid 'Authorization: Bearer <token>' header is required\n",
        'WWW-Authenticate: Bearer realm="tether"\r\n',
      );
    }
    if (this.#connections.size >= this.#limits.maxConnections)
      return refuse("503 Service Unavailable", `tether serve already has ${this.#limits.maxConnections} clients\n`);
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws));
  }

  #accept(ws: WebSocket): void {
    const connection = new Connection(ws, this, this.#limits, this.#log);
    this.#connections.set(ws, connection);
    ws.on("message", (data) => void connection.receive(textOf(data)));
    ws.on("error", (err) => this.#log.info("tether serve: a client connection failed", { error: err.message }));
    ws.on("close", () => {
      this.#connections.delete(ws);
      connection.closed();
    });
  }

  began(): void {
    this.#pending++;
  }

  ended(): void {
    this.#pending--;
    if (this.#pending === 0) for (const wake of this.#idle.splice(0)) wake();
  }

  #whenIdle(): Promise<void> {
    if (this.#pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  // ── sessions ────────────────────────────────────────────────────────────

  async #session(id: string): Promise<Session> {
    const entry = this.#sessions.get(id);
    if (entry === undefined) throw unknownSession(id);
    return entry.ready;
  }

  async #open(p: ParamsOf<"session.open">): Promise<unknown> {
    const existing = this.#sessions.get(p.id);
    if (existing !== undefined) {
      if (existing.workspace !== p.workspace) {
        throw new RpcFailure(
          RpcCode.sessionConflict,
          ServeCode.sessionConflict,
          `Session '${p.id}' is open on the workspace ${existing.workspace}; close it first, or use another id`,
        );
      }
      const session = await existing.ready;
      if (p.policy !== undefined) session.setPolicy(p.policy);
      return this.#opened(session, true);
    }
    if (this.#sessions.size >= this.#limits.maxSessions) {
      throw new RpcFailure(
        RpcCode.busy,
        ServeCode.busy,
        `The server already has ${this.#limits.maxSessions} sessions open; close one first`,
      );
    }
    const ready = Session.open(this.#broker, {
      id: p.id,
      workspace: p.workspace,
      ...(p.policy !== undefined ? { policy: p.policy } : {}),
    });
    const entry: SessionEntry = { workspace: p.workspace, ready, opened: null };
    this.#sessions.set(p.id, entry);
    ready.then(
      (session) => void (entry.opened = session),
      () => {},
    );
    ready.catch(() => {
      if (this.#sessions.get(p.id) === entry) this.#sessions.delete(p.id);
    });
    return this.#opened(await ready, false);
  }

  #opened(session: Session, alreadyOpen: boolean): unknown {
    return {
      id: session.id,
      workspace: session.workspace,
      policy: session.policy,
      already_open: alreadyOpen,
      extensions: session.status(),
    };
  }

  /**
   * The sessions open now, for a route to list, reload and close as
   * session.reload and session.close do (the console's LiveSessions).
   */
  liveSessions() {
    return {
      list: async () =>
        [...this.#sessions.entries()]
          .flatMap(([id, entry]) =>
            entry.opened === null ? [] : [{ id, workspace: entry.workspace, extensions: entry.opened.status() }],
          )
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
      reload: async (id: string) => (await this.#session(id)).reload(),
      close: (id: string) => this.#end(id, (session) => session.close("other")),
      /** The session open under `id` (done opening), or null. */
      get: (id: string): Session | null => this.#sessions.get(id)?.opened ?? null,
    };
  }

  /** Takes a session off the server (new requests for it get unknown_session), then ends it. */
  async #end<T>(id: string, how: (session: Session) => Promise<T>): Promise<T> {
    const entry = this.#sessions.get(id);
    if (entry === undefined) throw unknownSession(id);
    this.#sessions.delete(id);
    return how(await entry.ready);
  }

  // ── methods ─────────────────────────────────────────────────────────────

  async handle<M extends Method>(method: M, params: ParamsOf<M>, ctx: RequestContext): Promise<unknown> {
    switch (method) {
      case "session.open":
        return this.#open(params as ParamsOf<"session.open">);
      case "session.status":
        return (await this.#session((params as ParamsOf<"session.status">).session)).status();
      case "session.tools":
        return (await this.#session((params as ParamsOf<"session.tools">).session)).tools();
      case "session.commands":
        return (await this.#session((params as ParamsOf<"session.commands">).session)).commands();
      case "session.reload":
        return (await this.#session((params as ParamsOf<"session.reload">).session)).reload();
      case "session.prefer": {
        const p = params as ParamsOf<"session.prefer">;
        (await this.#session(p.session)).prefer(p.extension, p.enabled);
        return { extension: p.extension, enabled: p.enabled };
      }
      case "session.set_policy": {
        const p = params as ParamsOf<"session.set_policy">;
        const session = await this.#session(p.session);
        session.setPolicy(p.policy);
        return { policy: session.policy };
      }
      case "session.fire": {
        const p = params as ParamsOf<"session.fire">;
        const payload = checkPayload(p.event, p.payload);
        const session = await this.#session(p.session);
        return composedToWire(await session.fire(p.event as HarnessEvent, payload as HarnessPayload<HarnessEvent>));
      }
      case "tool.call": {
        const p = params as ParamsOf<"tool.call">;
        const session = await this.#session(p.session);
        const report = await session.callTool(p.tool, JSON.stringify(p.arguments ?? {}), {
          signal: ctx.signal,
          onReport: ctx.partial,
          ...(p.call_id !== undefined ? { callId: p.call_id } : {}),
        });
        return reportToWire(report, ctx.dropped());
      }
      case "command.run": {
        const p = params as ParamsOf<"command.run">;
        const session = await this.#session(p.session);
        const run = await session.runCommand(p.line, { signal: ctx.signal, onReport: ctx.partial });
        return { extension: run.extension, outcome: run.outcome, partials_dropped: ctx.dropped() };
      }
      case "session.close": {
        const p = params as ParamsOf<"session.close">;
        return this.#end(p.session, async (session) => ({
          closed: true,
          notes: await session.close(p.reason ?? "other"),
        }));
      }
      case "session.destroy":
        return this.#end((params as ParamsOf<"session.destroy">).session, async (session) => {
          await session.destroy();
          return { destroyed: true };
        });
      case "session.context":
        return (await this.#session((params as ParamsOf<"session.context">).session)).context();
      case "session.routes":
        return (await this.#session((params as ParamsOf<"session.routes">).session)).routes();
      case "session.route": {
        const p = params as ParamsOf<"session.route">;
        return routeToWire(
          await (await this.#session(p.session)).route(p.extension, p.route, p.request, { signal: ctx.signal }),
        );
      }
      case "session.strategies":
        return (await this.#session((params as ParamsOf<"session.strategies">).session)).strategies();
      case "session.prefer_strategy": {
        const p = params as ParamsOf<"session.prefer_strategy">;
        (await this.#session(p.session)).preferStrategy(p.strategy);
        return { strategy: p.strategy };
      }
      case "session.compact": {
        const { session, ...input } = params as ParamsOf<"session.compact">;
        return compactToWire(await (await this.#session(session)).compact(input, { signal: ctx.signal }));
      }
      case "session.folds": {
        const p = params as ParamsOf<"session.folds">;
        return (await this.#session(p.session)).folds(p.compaction_id).map(foldToWire);
      }
      case "session.prefer_providers": {
        const p = params as ParamsOf<"session.prefer_providers">;
        const session = await this.#session(p.session);
        session.preferProviders(p.preference);
        return { preference: session.providers().preference };
      }
      case "session.search_providers":
        return searchProvidersToWire(
          (await this.#session((params as ParamsOf<"session.search_providers">).session)).searchProviders(),
        );
      case "session.prefer_search": {
        const p = params as ParamsOf<"session.prefer_search">;
        const session = await this.#session(p.session);
        session.preferSearch(p.preference);
        return { preference: session.searchProviders().preference };
      }
      case "session.search": {
        const p = params as ParamsOf<"session.search">;
        const session = await this.#session(p.session);
        return searchReportToWire(await session.search(p.query, p.options ?? {}, { signal: ctx.signal }));
      }
      case "providers.list":
        return this.#broker.providers((params as ParamsOf<"providers.list">).session);
      case "providers.complete": {
        const { session, ...request } = params as ParamsOf<"providers.complete">;
        const report = await this.#broker.complete(request, {
          signal: ctx.signal,
          onPartial: ctx.partial,
          ...(session !== undefined ? { session } : {}),
        });
        return completionToWire(report, ctx.dropped());
      }
      case "login.start": {
        const p = params as ParamsOf<"login.start">;
        return this.#pendingLogins.start(p.extension, p.login);
      }
      case "login.wait":
        return this.#pendingLogins.wait((params as ParamsOf<"login.wait">).login_id, ctx.signal);
      case "login.cancel":
        return this.#pendingLogins.cancel((params as ParamsOf<"login.cancel">).login_id);
      case "login.status":
        return loginsOf(this.#broker).status((params as ParamsOf<"login.status">).extension);
      case "login.logout": {
        const p = params as ParamsOf<"login.logout">;
        return loginsOf(this.#broker).logout(p.extension, p.login);
      }
      case "call.cancel":
        // Answered by the connection itself (the request ids are the connection's).
        throw new RpcFailure(RpcCode.internal, ServeCode.internal, "call.cancel reached the server");
    }
    throw new RpcFailure(RpcCode.methodNotFound, ServeCode.unknownMethod, `Method not found: '${String(method)}'`);
  }

  // ── shutdown ────────────────────────────────────────────────────────────

  /**
   * Stops accepting (new clients and new requests), lets requests in flight
   * finish within `drainMs` (then cancels them), closes the clients, closes the
   * sessions and the broker (destroys them if that does not finish in time, or
   * if the drain ran out), and removes the socket file. `hurry` settling (a
   * second signal) skips whatever waiting is left.
   */
  async shutdown(hurry: Promise<unknown>): Promise<void> {
    this.#accepting = false;
    this.#http.close(); // no new connections; a Unix socket's file goes with its listener
    this.#pagesHttp.close();
    this.#pendingLogins.cancelAll();
    for (const companion of this.#companions) await companion.stop();
    const inFlight = [...this.#connections.values()].reduce((n, c) => n + c.inFlight, 0);
    this.#say(
      `tether serve: shutting down; ${inFlight} request(s) in ` +
        `flight get up to ${this.#limits.drainMs / 1000} s to finish`,
    );
    let graceful = await within(this.#whenIdle(), this.#limits.drainMs, hurry);
    if (!graceful) {
      this.#say("tether serve: cancelling the requests still in flight");
      for (const connection of this.#connections.values()) connection.cancelAll();
      // Cancelled calls answer promptly (`cancelled`): give their answers a moment to go out, even in a hurry.
      await within(this.#whenIdle(), 2_000, new Promise(() => {}));
    }
    // Every answer is queued by now; a close frame follows it.
    for (const connection of this.#connections.values()) connection.close(1001, "tether serve is shutting down");
    const entries = [...this.#sessions.values()];
    this.#sessions.clear();
    const ending = Promise.allSettled(
      entries.map(async (entry) => {
        const session = await entry.ready;
        if (graceful) await session.close("shutdown");
        else await session.destroy();
      }),
    );
    graceful = (await within(ending, this.#limits.drainMs, hurry)) && graceful;
    if (graceful) await this.#broker.close();
    else await this.#broker.destroy();
    // Clients that did not answer the close frame are cut off rather than waited for.
    await within(this.#allClosed(), 1_000, hurry);
    for (const ws of this.#connections.keys()) ws.terminate();
    this.#wss.close();
    removeSocket(this.#listening?.socket ?? null);
    removeSocket(this.#pagesListening?.socket ?? null);
    this.#pagesHttp.closeAllConnections();
    this.#say(`tether serve: stopped${graceful ? "" : " (requests or sessions were cut short)"}`);
  }

  #allClosed(): Promise<void> {
    return Promise.all(
      [...this.#connections.keys()].map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === ws.CLOSED) resolve();
            else ws.once("close", () => resolve());
          }),
      ),
    ).then(() => {});
  }
}
