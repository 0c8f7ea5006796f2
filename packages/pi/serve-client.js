/**
 * A JSON-RPC 2.0 client for `tether serve` over its WebSocket (docs/api.md):
 * one connection, requests matched to answers by id, `tool.partial`
 * notifications routed to the request they belong to. Every failure to
 * connect says what to change; nothing the server sends is trusted until the
 * caller's schema has checked it.
 */
import { WebSocket } from "ws";

/** Answers bigger than this close the connection (the server's own bound on what it receives is 4 MiB). */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** Connecting (the upgrade and the token check) should take milliseconds on loopback. */
const CONNECT_TIMEOUT_MS = 10_000;
/** A partial's text is progress for the user: more than this is cut. */
const MAX_PARTIAL_CHARS = 4096;

/** The server answered a JSON-RPC error: `code` is the JSON-RPC code, `tetherCode` the `data.code`. */
export class ServeError extends Error {
  /**
   * @param {number} code
   * @param {string} message
   * @param {string | undefined} tetherCode
   */
  constructor(code, message, tetherCode) {
    super(message);
    this.name = "ServeError";
    this.code = code;
    this.tetherCode = tetherCode;
  }
}

/**
 * Why a connection attempt failed, as a sentence that names what to change.
 * @param {string} url
 * @param {unknown} error
 */
function unreachable(url, error) {
  const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "";
  const why = code !== "" ? code : error instanceof Error ? error.message : String(error);
  return new Error(
    `Tether: cannot reach tether serve at ${url} (${why}). Start it with \`tether serve\` ` +
      "(or `tether serve --port <n>`), or set TETHER_URL to where it listens.",
  );
}

/**
 * Opens a connection to `url` with the bearer `token`; rejects with a message
 * that says what to change when the server is not there or refuses the token.
 * @param {{ url: string, token: string, tokenSource: string }} where
 * @returns {Promise<ServeClient>}
 */
export function connectServe({ url, token, tokenSource }) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      headers: { Authorization: `Bearer ${token}` },
      maxPayload: MAX_ANSWER_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: CONNECT_TIMEOUT_MS,
    });
    let settled = false;
    const fail = (/** @type {Error} */ error) => {
      if (settled) return;
      settled = true;
      ws.terminate();
      reject(error);
    };
    ws.once("unexpected-response", (_req, res) => {
      res.resume();
      if (res.statusCode === 401)
        fail(
          new Error(
            `Tether: tether serve at ${url} refused the token from ${tokenSource} (HTTP 401). ` +
              "Set TETHER_TOKEN to the content of the server's token file, or TETHER_TOKEN_FILE to its path " +
              "(`tether serve` prints it: $TETHER_HOME/serve.token by default).",
          ),
        );
      else fail(new Error(`Tether: ${url} answered HTTP ${res.statusCode}, not a WebSocket. Is TETHER_URL right?`));
    });
    ws.once("error", (error) => fail(unreachable(url, error)));
    ws.once("open", () => {
      if (settled) return;
      settled = true;
      resolve(new ServeClient(ws, url));
    });
  });
}

export class ServeClient {
  /**
   * @param {WebSocket} ws
   * @param {string} url
   */
  constructor(ws, url) {
    this.url = url;
    this.ws = ws;
    this.nextId = 1;
    /**
     * @type {Map<number, {
     *   resolve: (v: unknown) => void, reject: (e: Error) => void, onPartial?: (text: string) => void
     * }>}
     */
    this.pending = new Map();
    /** @type {string | null} why the connection is gone, once it is */
    this.closed = null;
    ws.on("message", (data, isBinary) => {
      if (!isBinary) this.receive(data.toString("utf8"));
    });
    ws.on("error", () => {
      // "close" follows and says it; an unhandled "error" would crash pi.
    });
    ws.on("close", (code, reason) => {
      const text = reason.toString("utf8").slice(0, 200);
      this.closed = `the connection to tether serve at ${url} closed (${code}${text !== "" ? `: ${text}` : ""})`;
      for (const call of this.pending.values())
        call.reject(new Error(`Tether: ${this.closed}. Restart \`tether serve\` and pi.`));
      this.pending.clear();
    });
  }

  /** @param {string} text */
  receive(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return; // Not JSON: nothing here can be matched to a request.
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) return;
    if (message.method === "tool.partial") {
      const params = message.params;
      if (typeof params !== "object" || params === null || typeof params.text !== "string") return;
      this.pending.get(params.id)?.onPartial?.(params.text.slice(0, MAX_PARTIAL_CHARS));
      return;
    }
    const call = typeof message.id === "number" ? this.pending.get(message.id) : undefined;
    if (call === undefined) return;
    this.pending.delete(message.id);
    if ("error" in message) {
      const error = typeof message.error === "object" && message.error !== null ? message.error : {};
      const data = typeof error.data === "object" && error.data !== null ? error.data : {};
      call.reject(
        new ServeError(
          typeof error.code === "number" ? error.code : -32603,
          typeof error.message === "string" ? error.message.slice(0, 4096) : "tether serve answered an error",
          typeof data.code === "string" ? data.code : undefined,
        ),
      );
    } else call.resolve(message.result);
  }

  /**
   * Sends one request; its answer's `result` (unchecked: the caller parses it).
   * `signal` aborting sends `call.cancel` for it (the server answers the call `cancelled`).
   * @param {string} method
   * @param {Record<string, unknown>} params
   * @param {{ onPartial?: (text: string) => void, signal?: AbortSignal }} [options]
   * @returns {Promise<unknown>}
   */
  request(method, params, options = {}) {
    if (this.closed !== null)
      return Promise.reject(new Error(`Tether: ${this.closed}. Restart \`tether serve\` and pi.`));
    const id = this.nextId++;
    const { onPartial, signal } = options;
    return new Promise((resolve, reject) => {
      const cancel = () => this.notify("call.cancel", { id });
      const settle = (/** @type {() => void} */ done) => {
        signal?.removeEventListener("abort", cancel);
        done();
      };
      this.pending.set(id, {
        resolve: (value) => settle(() => resolve(value)),
        reject: (error) => settle(() => reject(error)),
        onPartial,
      });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      if (signal?.aborted) cancel();
      else signal?.addEventListener("abort", cancel, { once: true });
    });
  }

  /**
   * A notification: run by the server, never answered.
   * @param {string} method
   * @param {Record<string, unknown>} params
   */
  notify(method, params) {
    if (this.closed === null) this.ws.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
  }

  /** Closes the connection once what was sent has gone out. */
  close() {
    if (this.closed !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once("close", () => resolve(undefined));
      this.ws.close(1000, "pi is done");
    });
  }
}
