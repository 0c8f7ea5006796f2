/**
 * Tether's MCP server engine: what `tether mcp` used of the SDK's `Server`
 * (server/index.js over shared/protocol.js, 1.32.2), without loading the SDK
 * or zod (a fifth of the command's start-up, and most of the server's own cost
 * per call). It speaks over any SDK-shaped `Transport`: its own stdio one
 * (stdio.ts), the SDK's Streamable HTTP one, the SDK's in-memory pair.
 *
 *   message ─► request, notification, response, or none (messages.ts; none and
 *   responses: `onerror`) ─► request: its handler (-32601 without one) ─► params
 *   (-32602 naming the member) ─► the handler's result, or the error it threw
 *   (its integer `code`, else -32603) — nothing at all once the request was
 *   cancelled (`notifications/cancelled` for its id, or the connection closed).
 *
 * As the SDK's server: a request before `initialize` is answered as any other;
 * `initialize` may come again; unknown notifications are ignored; only one
 * transport at a time.
 */
import * as v from "valibot";
import type {
  JSONRPCMessage,
  ServerCapabilities,
  ServerNotification,
  ServerResult,
} from "@modelcontextprotocol/sdk/types.js";
import { describeIssues } from "../../../jail-runtime/wire/frames.js";
import { ErrorCode } from "./error-codes.js";
import { classify, type JsonRpcNotification, type JsonRpcRequest, type RequestId } from "./messages.js";
import {
  isMethod,
  isNotification,
  NOTIFICATION_PARAMS,
  REQUEST_PARAMS,
  type Method,
  type NotificationParamsOf,
  type ParamsOf,
} from "./methods.js";
import type { Transport, TransportSendOptions } from "./transport.js";
import { negotiatedVersion } from "./versions.js";

export interface ServerInfo {
  readonly name: string;
  readonly version: string;
}

export interface EngineOptions {
  readonly capabilities: ServerCapabilities;
  /** Told to the client in `initialize`'s answer (how to use this server). */
  readonly instructions?: string;
}

/** What a request's handler is given beside its params. */
export interface RequestExtra {
  /** Aborted when the client cancels this request or the connection closes: its answer is then never sent. */
  readonly signal: AbortSignal;
  readonly requestId: RequestId;
  /** The request's `_meta` (its progress token, among others). */
  readonly _meta: Record<string, unknown> | undefined;
  /** The transport's session (Streamable HTTP), if it has one. */
  readonly sessionId: string | undefined;
  /** A notification about this request, on its own stream (Streamable HTTP); dropped once it is cancelled. */
  readonly sendNotification: (notification: ServerNotification) => Promise<void>;
}

export type RequestHandler<M extends Method> = (
  params: ParamsOf<M>,
  extra: RequestExtra,
) => ServerResult | Record<string, unknown> | Promise<ServerResult | Record<string, unknown>>;

/** Which capability each notification the server sends needs (the SDK refuses to send it without). */
const NOTIFICATION_NEEDS: Readonly<Record<string, keyof ServerCapabilities>> = {
  "notifications/message": "logging",
  "notifications/resources/updated": "resources",
  "notifications/resources/list_changed": "resources",
  "notifications/tools/list_changed": "tools",
  "notifications/prompts/list_changed": "prompts",
};

/** Which capability a method's handler needs declared (the SDK refuses to register it without). */
const HANDLER_NEEDS: Readonly<Partial<Record<Method, keyof ServerCapabilities>>> = {
  "logging/setLevel": "logging",
  "tools/list": "tools",
  "tools/call": "tools",
  "prompts/list": "prompts",
  "prompts/get": "prompts",
  "completion/complete": "completions",
  "resources/list": "resources",
  "resources/templates/list": "resources",
  "resources/read": "resources",
};

/**
 * Requests one client may have open at once (each may hold an extension's invocation, queued in the
 * session); past it a request is answered `busy` at once, so a client that never waits piles nothing up.
 * `tools/call` has a tighter bound of its own (server.ts), answered as a tool error.
 */
export const MAX_REQUESTS_IN_FLIGHT = 64;

export class McpEngine {
  readonly #info: ServerInfo;
  readonly #capabilities: ServerCapabilities;
  readonly #instructions: string | undefined;
  readonly #handlers = new Map<string, (params: never, extra: RequestExtra) => unknown>();
  /** Each request in flight's abort, by id: a cancellation or the close aborts it. */
  readonly #inFlight = new Map<RequestId, AbortController>();
  #transport: Transport | undefined;

  /** A transport's failure or a message that is none (said, never answered). */
  onerror?: (error: Error) => void;
  /** The connection closed (the transport's close, or `close()`). */
  onclose?: () => void;
  /** The client said `notifications/initialized`. */
  oninitialized?: () => void;

  constructor(info: ServerInfo, options: EngineOptions) {
    this.#info = info;
    this.#capabilities = options.capabilities;
    this.#instructions = options.instructions;
    this.setRequestHandler("initialize", (params) => ({
      protocolVersion: negotiatedVersion(params.protocolVersion),
      capabilities: this.#capabilities,
      serverInfo: this.#info,
      ...(this.#instructions ? { instructions: this.#instructions } : {}),
    }));
    this.setRequestHandler("ping", () => ({}));
    // As the SDK's server: a declared logging capability answers setLevel until a handler of its own replaces this.
    if (this.#capabilities.logging !== undefined) this.setRequestHandler("logging/setLevel", () => ({}));
  }

  /** The method's handler, in place of any before it. */
  setRequestHandler<M extends Method>(method: M, handler: RequestHandler<M>): void {
    const needs = HANDLER_NEEDS[method];
    if (needs !== undefined && this.#capabilities[needs] === undefined)
      throw new Error(`Server does not support ${needs} (required for ${method})`);
    this.#handlers.set(method, handler as (params: never, extra: RequestExtra) => unknown);
  }

  get transport(): Transport | undefined {
    return this.#transport;
  }

  /** Takes `transport` over (its callbacks are chained, the ones it had called first) and starts it. */
  async connect(transport: Transport): Promise<void> {
    if (this.#transport !== undefined)
      throw new Error("Already connected to a transport: close() first, or use one server per connection");
    this.#transport = transport;
    const prior = { onclose: transport.onclose, onerror: transport.onerror, onmessage: transport.onmessage };
    transport.onclose = () => {
      prior.onclose?.();
      this.#closed();
    };
    transport.onerror = (error) => {
      prior.onerror?.(error);
      this.onerror?.(error);
    };
    transport.onmessage = (message, extra) => {
      prior.onmessage?.(message, extra);
      this.#receive(message, transport);
    };
    await transport.start();
  }

  /** Closes the transport: every request in flight is aborted and answered no more. */
  async close(): Promise<void> {
    await this.#transport?.close();
  }

  /** Sends a notification (with `relatedRequestId`: on that request's stream). */
  async notification(notification: ServerNotification, options?: TransportSendOptions): Promise<void> {
    const transport = this.#transport;
    if (transport === undefined) throw new Error("Not connected");
    const needs = NOTIFICATION_NEEDS[notification.method];
    if (needs !== undefined && this.#capabilities[needs] === undefined)
      throw new Error(`Server does not support ${needs} (required for ${notification.method})`);
    await transport.send({ ...notification, jsonrpc: "2.0" } as JSONRPCMessage, options);
  }

  sendToolListChanged(): Promise<void> {
    return this.notification({ method: "notifications/tools/list_changed" });
  }

  sendPromptListChanged(): Promise<void> {
    return this.notification({ method: "notifications/prompts/list_changed" });
  }

  sendResourceListChanged(): Promise<void> {
    return this.notification({ method: "notifications/resources/list_changed" });
  }

  #closed(): void {
    for (const controller of this.#inFlight.values()) controller.abort();
    this.#inFlight.clear();
    this.#transport = undefined;
    this.onclose?.();
  }

  #receive(message: unknown, transport: Transport): void {
    const incoming = classify(message);
    switch (incoming.kind) {
      case "request":
        return this.#request(incoming.message, transport);
      case "notification":
        return this.#notification(incoming.message);
      case "response":
        // This server sends no requests: no response can be one it waits for.
        return this.onerror?.(new Error(`Received a response for an unknown message ID: ${String(incoming.id)}`));
      case "invalid":
        return this.onerror?.(
          new Error(
            incoming.issues === null
              ? "Not a JSON-RPC message (not an object)"
              : `Not a JSON-RPC message: ${describeIssues(incoming.issues)}`,
          ),
        );
    }
  }

  #request(request: JsonRpcRequest, transport: Transport): void {
    const { id, method } = request;
    const handler = this.#handlers.get(method);
    const failed = (err: unknown) => this.onerror?.(new Error(`Failed to send a response: ${String(err)}`));
    if (handler === undefined || !isMethod(method)) {
      transport
        .send({ jsonrpc: "2.0", id, error: { code: ErrorCode.MethodNotFound, message: "Method not found" } })
        .catch(failed);
      return;
    }
    if (this.#inFlight.size >= MAX_REQUESTS_IN_FLIGHT) {
      const message = `busy: this client has ${MAX_REQUESTS_IN_FLIGHT} requests open; wait for one to end`;
      transport.send({ jsonrpc: "2.0", id, error: { code: ErrorCode.Busy, message } }).catch(failed);
      return;
    }
    const controller = new AbortController();
    this.#inFlight.set(id, controller);
    const { signal } = controller;
    const extra: RequestExtra = {
      signal,
      requestId: id,
      _meta: request.params?._meta,
      sessionId: transport.sessionId,
      sendNotification: async (notification) => {
        if (signal.aborted) return;
        await this.notification(notification, { relatedRequestId: id });
      },
    };
    Promise.resolve()
      .then(() => handler(paramsOf(method, request) as never, extra))
      .then(
        async (result) => {
          if (signal.aborted) return;
          await transport.send({ result, jsonrpc: "2.0", id } as JSONRPCMessage);
        },
        async (error: unknown) => {
          if (signal.aborted) return;
          await transport.send({ jsonrpc: "2.0", id, error: errorOf(error) });
        },
      )
      .catch(failed)
      .finally(() => {
        // A later request may have reused the id: only this one's entry goes.
        if (this.#inFlight.get(id) === controller) this.#inFlight.delete(id);
      });
  }

  #notification(notification: JsonRpcNotification): void {
    const { method } = notification;
    if (!isNotification(method)) return;
    const parsed = v.safeParse(NOTIFICATION_PARAMS[method], { params: notification.params });
    if (!parsed.success) {
      this.onerror?.(new Error(`Invalid ${method} notification: ${describeIssues(parsed.issues)}`));
      return;
    }
    if (method === "notifications/cancelled") {
      const { requestId, reason } = parsed.output.params as NotificationParamsOf<"notifications/cancelled">;
      if (requestId !== undefined) this.#inFlight.get(requestId)?.abort(reason);
    } else if (method === "notifications/initialized") {
      this.oninitialized?.();
    } else {
      // Progress is only ever about a request this server sent, and it sends none.
      this.onerror?.(
        new Error(`Received a progress notification for an unknown token: ${JSON.stringify(notification)}`),
      );
    }
  }
}

/** A request's params as its method's schema reads them; throws the -32602 that names the member. */
function paramsOf<M extends Method>(method: M, request: JsonRpcRequest): ParamsOf<M> {
  const parsed = v.safeParse(REQUEST_PARAMS[method], { params: request.params });
  if (!parsed.success)
    throw Object.assign(new Error(`Invalid params for ${method}: ${describeIssues(parsed.issues)}`), {
      code: ErrorCode.InvalidParams,
    });
  return parsed.output.params as ParamsOf<M>;
}

/** What a handler's throw is answered with: its integer `code`, `message` and `data`, or -32603. */
function errorOf(error: unknown): { code: number; message: string; data?: unknown } {
  const e = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    message?: unknown;
    data?: unknown;
  };
  return {
    code: Number.isSafeInteger(e.code) ? (e.code as number) : ErrorCode.InternalError,
    message: typeof e.message === "string" ? e.message : "Internal error",
    ...(e.data !== undefined ? { data: e.data } : {}),
  };
}
