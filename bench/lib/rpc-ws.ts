/**
 * A JSON-RPC 2.0 client over a WebSocket (the `ws` package), as a harness
 * talks to `tether serve`; and the transport floor it is measured against, a
 * bare `ws` server that sends each message back as it came.
 */
import { createServer } from "node:http";
import { WebSocket, WebSocketServer, type RawData } from "ws";

function textOf(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

export interface RpcAnswer {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: { code: number; message: string };
  /** The floor echoes the request: its method comes back. */
  readonly method?: string;
  readonly params?: unknown;
}

export class RpcClient {
  readonly #ws: WebSocket;
  readonly #waiting = new Map<number, (answer: RpcAnswer) => void>();
  #next = 1;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on("message", (data) => {
      const answer = JSON.parse(textOf(data)) as RpcAnswer;
      const resolve = this.#waiting.get(answer.id);
      if (resolve === undefined) return; // a notification (tool.partial)
      this.#waiting.delete(answer.id);
      resolve(answer);
    });
  }

  /** `url`: `ws+unix:<path>` or `ws://host:port`. */
  static connect(url: string, token?: string): Promise<RpcClient> {
    const ws = new WebSocket(url, {
      perMessageDeflate: false,
      ...(token !== undefined ? { headers: { Authorization: `Bearer ${token}` } } : {}),
    });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new RpcClient(ws)));
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`the upgrade was answered ${res.statusCode}`)));
    });
  }

  /** Sends one request; resolves with its answer, whatever it says. */
  send(method: string, params: object): Promise<RpcAnswer> {
    const id = this.#next++;
    const answer = new Promise<RpcAnswer>((resolve) => this.#waiting.set(id, resolve));
    this.#ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return answer;
  }

  /** Sends one request; resolves with its result, rejects with its error. */
  async request(method: string, params: object): Promise<unknown> {
    const answer = await this.send(method, params);
    if (answer.error !== undefined) throw new Error(`${method}: ${answer.error.code} ${answer.error.message}`);
    return answer.result;
  }

  close(): Promise<void> {
    if (this.#ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.#ws.once("close", () => resolve());
      this.#ws.close();
    });
  }
}

/** A `ws` server on a Unix socket that sends every message straight back (the transport floor of `tether serve`). */
export async function echoWsServer(socketPath: string): Promise<{ url: string; close: () => Promise<void> }> {
  const http = createServer();
  const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
  wss.on("connection", (ws) => ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary })));
  await new Promise<void>((resolve) => http.listen(socketPath, resolve));
  return {
    url: `ws+unix:${socketPath}`,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
