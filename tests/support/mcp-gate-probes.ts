/**
 * Probes for an MCP endpoint's gate over HTTP (broker/mcp/http-gate.ts), by
 * class: every spelling of a Host that is not a loopback name, every Origin
 * that is not the server's own, every way a bearer token can be missing or
 * wrong — and the raw request that sends them with every header as given.
 */
import { request } from "node:http";

export interface RawAnswer {
  readonly status: number;
  readonly body: string;
}

export interface RawRequest {
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
}

/** One raw request to 127.0.0.1:`to` (a port) or a Unix socket, every header as given (Host included). */
export function rawRequest(to: number | { readonly socketPath: string }, options: RawRequest): Promise<RawAnswer> {
  return new Promise<RawAnswer>((resolve, reject) => {
    const req = request(
      {
        ...(typeof to === "number" ? { host: "127.0.0.1", port: to } : { socketPath: to.socketPath }),
        method: options.method ?? "POST",
        path: options.path,
        headers: options.headers ?? {},
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", (err) => {
      // A server that ends the connection mid-upload (413) may reset it before the answer is read.
      if ((err as NodeJS.ErrnoException).code === "EPIPE" || (err as NodeJS.ErrnoException).code === "ECONNRESET")
        resolve({ status: -1, body: err.message });
      else reject(err);
    });
    req.end(options.body);
  });
}

export const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } },
});

/** The headers of a well-formed request to `port` with `token`; `override` replaces any (undefined: left out). */
export function mcpHeaders(
  port: number,
  token: string,
  override: Record<string, string | undefined> = {},
): Record<string, string> {
  const all: Record<string, string | undefined> = {
    host: `127.0.0.1:${port}`,
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...override,
  };
  return Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined));
}

/** Hosts a page made to resolve to 127.0.0.1 (DNS rebinding) or a stray client might send: none is loopback. */
export function foreignHosts(port: number): string[] {
  return [
    "evil.example",
    `evil.example:${port}`,
    `127.0.0.1.evil.example:${port}`,
    `localhost.evil.example:${port}`,
    `evil.example@127.0.0.1:${port}`,
    `127.0.0.2:${port}`,
    `0.0.0.0:${port}`,
    `[::2]:${port}`,
    `2130706433:${port}`,
    `0x7f.1:${port}`,
    "",
  ];
}

/** The loopback names, in any case: each is let through. */
export function loopbackHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`];
}

/** Origins that are not `http://<loopback name>:<port>` exactly. */
export function foreignOrigins(port: number): string[] {
  return [
    "http://evil.example",
    "null",
    `http://localhost:${port + 1}`,
    `https://localhost:${port}`,
    `http://127.0.0.1.evil.example:${port}`,
    `http://localhost:${port}/path`,
    "file://",
    `http://user@localhost:${port}`,
    "not a url",
  ];
}

/** The server's own origins. */
export function ownOrigins(port: number): string[] {
  return [`http://localhost:${port}`, `http://127.0.0.1:${port}`, `http://[::1]:${port}`];
}

/** Authorization headers that do not carry `token` as a bearer (undefined: no header). */
export function wrongAuthorizations(token: string): (string | undefined)[] {
  return [
    undefined,
    "",
    "Bearer",
    "Bearer ",
    `Bearer ${token}x`,
    `Bearer ${token.slice(0, -1)}`,
    `Basic ${token}`,
    `${token}`,
    `Bearer ${token} ${token}`,
    `Bearer ${token.toUpperCase()}`,
  ];
}

/** Path segments in the token's place that are not the token. */
export function wrongPathTokens(token: string): string[] {
  return [`${token}x`, token.slice(0, 10), "", `x${token}`];
}
