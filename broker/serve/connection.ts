/**
 * One client of `tether serve`: its JSON-RPC messages in, its answers and
 * partial notifications out, its requests in flight (bounded, cancellable),
 * and what happens when it stops reading.
 *
 *   message ─► JSON? (-32700) ─► one request or a batch ─► envelope (-32600)
 *           ─► method (-32601) ─► params (-32602) ─► in-flight bound ("busy")
 *           ─► the server's handler ─► result, or the error it threw
 *
 * Back-pressure: `bufferedAmount` is what this server queued for the client and
 * the client has not taken yet. Past `partialHighWater` a partial is dropped and
 * counted (the result says how many); past `closeHighWater` the client is cut
 * off (terminated, its calls cancelled) instead of queueing more for it.
 */
import * as v from "valibot";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import type { Logger } from "../base/log.js";
import {
  Envelope,
  RpcCode,
  RpcFailure,
  ServeCode,
  checkParams,
  isMethod,
  salvageId,
  toRpcError,
  type Method,
  type ParamsOf,
  type RpcId,
} from "./protocol.js";
import { CALLER_JSON_BOUNDS, scanJson } from "../../jail-runtime/wire/document-bounds.js";

/** Messages past this many characters are parsed one per connection per event-loop turn. */
const LARGE_MESSAGE = 64 * 1024;

export interface ServeLimits {
  /** Requests one connection may have in flight; beyond it a request is answered "busy". */
  readonly maxInFlight: number;
  /** The largest message a client may send (bytes); a larger one closes that connection (1009). */
  readonly maxPayload: number;
  /** Bytes queued for a client past which partials for it are dropped (and counted). */
  readonly partialHighWater: number;
  /** Bytes queued for a client past which it is disconnected instead of sent more. */
  readonly closeHighWater: number;
  /** How long shutdown waits for requests in flight (and then for sessions to close). */
  readonly drainMs: number;
  /** Sessions open on the server at once. */
  readonly maxSessions: number;
  /** Clients connected at once. */
  readonly maxConnections: number;
}

export const DEFAULT_LIMITS: ServeLimits = {
  maxInFlight: 32,
  maxPayload: 4 * 1024 * 1024,
  partialHighWater: 1024 * 1024,
  closeHighWater: 16 * 1024 * 1024,
  drainMs: 10_000,
  maxSessions: 256,
  maxConnections: 128,
};

/** The part of a `ws` WebSocket a connection uses (tests hand it a fake). */
export interface ClientSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
}

const OPEN = 1;

/** What one request's handler may use. */
export interface RequestContext {
  /** Aborted by `call.cancel`, by the client going away, or by a shutdown that ran out of time. */
  readonly signal: AbortSignal;
  /**
   * Sends a partial notification for this request (`tool.partial`;
   * `providers.partial` for a completion), dropped when the client is not reading.
   */
  readonly partial: (text: string) => void;
  /** How many partials were dropped so far. */
  readonly dropped: () => number;
}

/** What the server provides a connection. */
export interface Handler {
  /** False once the server is shutting down: new requests are refused. */
  readonly accepting: boolean;
  handle<M extends Method>(method: M, params: ParamsOf<M>, ctx: RequestContext): Promise<unknown>;
  /** A message is being worked on / was answered (shutdown waits for the count to reach 0). */
  began(): void;
  ended(): void;
}

interface InFlight {
  readonly controller: AbortController;
  /** tool.call, command.run and providers.complete stop when aborted; the others run to their end. */
  readonly cancellable: boolean;
}

type Response =
  | { jsonrpc: "2.0"; id: RpcId | null; result: unknown }
  | { jsonrpc: "2.0"; id: RpcId | null; error: ReturnType<typeof toRpcError> };

function keyOf(id: RpcId): string {
  return `${typeof id}:${String(id)}`;
}

function failed(id: RpcId | null, err: unknown): Response {
  return { jsonrpc: "2.0", id, error: toRpcError(err) };
}

export class Connection {
  readonly #socket: ClientSocket;
  readonly #handler: Handler;
  readonly #limits: ServeLimits;
  readonly #log: Logger;
  readonly #inFlight = new Map<string, InFlight>();
  #notifications = 0;
  #closed = false;
  /** Partials dropped for this client, over its lifetime. */
  partialsDropped = 0;

  constructor(socket: ClientSocket, handler: Handler, limits: ServeLimits, log: Logger) {
    this.#socket = socket;
    this.#handler = handler;
    this.#limits = limits;
    this.#log = log;
  }

  /** The last large message's turn (see `receive`). */
  #turns: Promise<void> = Promise.resolve();

  /** Requests in flight on this connection. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Handles one message: a request, a notification or a batch. Never rejects. */
  async receive(text: string): Promise<void> {
    if (this.#closed) return;
    this.#handler.began();
    // A large message waits its turn: one per connection per turn of the event loop, so a client
    // that pipelines large requests shares the broker's thread instead of taking it.
    if (text.length > LARGE_MESSAGE) {
      const turn = this.#turns.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
      this.#turns = turn;
      await turn;
    }
    try {
      let message: unknown;
      try {
        scanJson(text, CALLER_JSON_BOUNDS);
      } catch (err) {
        // Checked before parsing: what a parse would build, and what walks it later, stay bounded.
        this.send(
          failed(
            null,
            new RpcFailure(
              RpcCode.invalidParams,
              ServeCode.badArguments,
              `Invalid params: the message is ${(err as Error).message} (the bound for any JSON document)`,
            ),
          ),
        );
        return;
      }
      try {
        message = JSON.parse(text);
      } catch (err) {
        this.send(
          failed(
            null,
            new RpcFailure(
              RpcCode.parseError,
              ServeCode.parseError,
              `Parse error: ${(err as Error).message.slice(0, 200)}`,
            ),
          ),
        );
        return;
      }
      if (Array.isArray(message)) {
        if (message.length === 0) {
          this.send(
            failed(
              null,
              new RpcFailure(RpcCode.invalidRequest, ServeCode.invalidRequest, "Invalid request: an empty batch"),
            ),
          );
          return;
        }
        // Each request's synchronous checks (the in-flight bound among them) run in order, now.
        const answers = (await Promise.all(message.map((one) => this.#request(one)))).filter(
          (a): a is Response => a !== null,
        );
        if (answers.length > 0) this.send(answers);
        return;
      }
      const answer = await this.#request(message);
      if (answer !== null) this.send(answer);
    } finally {
      this.#handler.ended();
    }
  }

  /** One request (or notification); null when nothing is to be answered. */
  async #request(raw: unknown): Promise<Response | null> {
    const envelope = v.safeParse(Envelope, raw);
    if (!envelope.success) {
      return failed(
        salvageId(raw),
        new RpcFailure(
          RpcCode.invalidRequest,
          ServeCode.invalidRequest,
          `Invalid request: ${describeIssues(envelope.issues)}`,
        ),
      );
    }
    const { method, params, id } = envelope.output;
    // A notification (no id) is run, never answered, not even with an error.
    const answer = (response: Response): Response | null => (id === undefined ? null : response);
    if (!isMethod(method)) {
      return answer(
        failed(
          id ?? null,
          new RpcFailure(
            RpcCode.methodNotFound,
            ServeCode.unknownMethod,
            `Method not found: '${method.slice(0, 128)}'; see docs/api.md`,
          ),
        ),
      );
    }
    let checked: ParamsOf<Method>;
    try {
      checked = checkParams(method, params);
    } catch (err) {
      return answer(failed(id ?? null, err));
    }
    if (method === "call.cancel") {
      // Never bounded and never refused: a client at its bound must still be able to cancel.
      return answer({
        jsonrpc: "2.0",
        id: id ?? null,
        result: { cancelled: this.#cancel((checked as ParamsOf<"call.cancel">).id) },
      });
    }
    if (!this.#handler.accepting) {
      return answer(
        failed(
          id ?? null,
          new RpcFailure(
            RpcCode.shuttingDown,
            ServeCode.shuttingDown,
            "The server is shutting down and takes no new requests",
          ),
        ),
      );
    }
    const key = id === undefined ? `notification:${++this.#notifications}` : keyOf(id);
    if (this.#inFlight.has(key)) {
      return answer(
        failed(
          id ?? null,
          new RpcFailure(
            RpcCode.invalidRequest,
            ServeCode.invalidRequest,
            `Invalid request: a request with id ${JSON.stringify(id)} is already in flight on this connection`,
          ),
        ),
      );
    }
    if (this.#inFlight.size >= this.#limits.maxInFlight) {
      return answer(
        failed(
          id ?? null,
          new RpcFailure(
            RpcCode.busy,
            ServeCode.busy,
            `This connection already has ${this.#limits.maxInFlight} requests in flight; wait for one to finish`,
          ),
        ),
      );
    }
    const entry: InFlight = {
      controller: new AbortController(),
      cancellable: method === "tool.call" || method === "command.run" || method === "providers.complete",
    };
    this.#inFlight.set(key, entry);
    let dropped = 0;
    const ctx: RequestContext = {
      signal: entry.controller.signal,
      partial:
        id === undefined
          ? () => {}
          : (text) => {
              if (!this.#partial(id, method === "providers.complete" ? "providers.partial" : "tool.partial", text))
                dropped++;
            },
      dropped: () => dropped,
    };
    try {
      const result = await this.#handler.handle(
        method as Exclude<Method, "call.cancel">,
        checked as ParamsOf<Exclude<Method, "call.cancel">>,
        ctx,
      );
      return answer({ jsonrpc: "2.0", id: id ?? null, result: result ?? null });
    } catch (err) {
      const response = failed(id ?? null, err);
      if ("error" in response && response.error.code === RpcCode.internal)
        this.#log.error("tether serve: a request failed unexpectedly", { method, error: (err as Error).message });
      return answer(response);
    } finally {
      this.#inFlight.delete(key);
      if (dropped > 0) {
        this.partialsDropped += dropped;
        this.#log.info("tether serve: dropped partials for a client that is not reading", { method, dropped });
      }
    }
  }

  /** Cancels this connection's request `id`; whether there was a cancellable one. */
  #cancel(id: RpcId): boolean {
    const entry = this.#inFlight.get(keyOf(id));
    if (entry === undefined || !entry.cancellable) return false;
    entry.controller.abort();
    return true;
  }

  /** Sends a partial unless the client is behind; false when it was dropped. */
  #partial(id: RpcId, notification: "tool.partial" | "providers.partial", text: string): boolean {
    if (this.#closed || this.#socket.readyState !== OPEN) return false;
    if (this.#socket.bufferedAmount > this.#limits.partialHighWater) return false;
    this.send({ jsonrpc: "2.0", method: notification, params: { id, text } });
    return true;
  }

  /** Sends one message, or cuts the client off when too much already waits for it. */
  send(message: unknown): void {
    if (this.#closed || this.#socket.readyState !== OPEN) return;
    const queued = this.#socket.bufferedAmount;
    if (queued > this.#limits.closeHighWater) {
      this.#log.warn("tether serve: disconnecting a client that is not reading", {
        queuedBytes: queued,
        limit: this.#limits.closeHighWater,
      });
      this.#socket.terminate();
      this.closed();
      return;
    }
    let text: string;
    try {
      text = JSON.stringify(message);
    } catch (err) {
      // An answer that cannot be written is that request's failure, never the server's.
      const id = (message as { id?: RpcId } | null)?.id ?? null;
      this.#log.error("tether serve: an answer could not be encoded", { error: (err as Error).message });
      text = JSON.stringify(
        failed(
          id,
          new RpcFailure(
            RpcCode.internal,
            ServeCode.internal,
            `The answer could not be encoded: ${(err as Error).message.slice(0, 200)}`,
          ),
        ),
      );
    }
    this.#socket.send(text);
  }

  /** Cancels every request in flight (their answers are still sent if the client is there). */
  cancelAll(): void {
    for (const entry of this.#inFlight.values()) entry.controller.abort();
  }

  /** The client went away: nothing more is sent, and its requests in flight are cancelled. */
  closed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.cancelAll();
  }

  /** Closes the connection politely (1001 for a shutdown). */
  close(code: number, reason: string): void {
    if (this.#socket.readyState === OPEN) this.#socket.close(code, reason);
  }
}
