/**
 * Test support for the console suites: a real ServeServer on a loopback port
 * over a temporary home, and a small HTTP client (node's fetch) that signs in
 * and keeps the cookie and the CSRF token as a browser would.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../../broker/broker.js";
import { silentLogger } from "../../../broker/base/log.js";
import { CSP } from "../../../broker/console/headers.js";
import { ServeServer } from "../../../broker/tether-serve/serve-server.js";
import { approvals, installs } from "../../../broker/store/schema.js";
import type { WebSocket } from "ws";
import { envOptions } from "../../support/env-options.js";

export const TOKEN = "c".repeat(64);

export interface ConsoleRig {
  readonly tmp: string;
  readonly broker: Broker;
  readonly server: ServeServer;
  /** http://127.0.0.1:<port> */
  readonly base: string;
  /** ws://127.0.0.1:<port> */
  readonly ws: string;
  stop(): Promise<void>;
}

/** A broker on a fresh home (an empty policy.toml) served on a free loopback port. */
export async function startConsole(
  prefix: string,
  setup: (broker: Broker) => Promise<void> = async () => {},
  options: { consoleBodyMs?: number } = {},
): Promise<ConsoleRig> {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: silentLogger });
  writeFileSync(join(broker.home, "policy.toml"), "");
  await setup(broker);
  const server = new ServeServer({ broker, token: TOKEN, log: silentLogger, say: () => {}, ...options });
  const { url } = await server.listen({ port: 0 });
  return {
    tmp,
    broker,
    server,
    base: url.replace(/^ws:/, "http:"),
    ws: url,
    stop: () => server.shutdown(Promise.resolve()),
  };
}

/** The registry's rows as they stand (what a refused request must leave as it was). */
export function registryRows(broker: Broker): string {
  return JSON.stringify([
    broker.store.orm.select().from(installs).orderBy(installs.name).all(),
    broker.store.orm.select().from(approvals).orderBy(approvals.id).all(),
  ]);
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A browser-like client: its cookie and the CSRF token of the last page it read. */
export class ConsoleClient {
  cookie: string | null = null;
  csrf: string | null = null;

  constructor(readonly base: string) {}

  async request(
    method: string,
    path: string,
    init: { body?: URLSearchParams | string; headers?: Record<string, string>; cookie?: string | null } = {},
  ): Promise<Answer> {
    const cookie = init.cookie === undefined ? this.cookie : init.cookie;
    const res = await fetch(`${this.base}${path}`, {
      method,
      redirect: "manual",
      headers: {
        ...(cookie !== null ? { cookie } : {}),
        ...(init.body !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...init.headers,
      },
      ...(init.body !== undefined ? { body: init.body.toString() } : {}),
    });
    const text = await res.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(text)?.[1];
    if (csrf !== undefined) this.csrf = csrf;
    return { status: res.status, headers: res.headers, text };
  }

  get(path: string): Promise<Answer> {
    return this.request("GET", path);
  }

  /**
   * A form POST as the browser sends it from the console's own page (Origin
   * and Sec-Fetch-Site same-origin), with the CSRF token unless given. A
   * `confirm: "yes"` without `seen` is posted as an operator does it: first
   * without confirm (the confirmation), then with the confirmation's digest.
   */
  async post(
    path: string,
    fields: Record<string, string | string[]> = {},
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    if (fields.confirm === "yes" && !("seen" in fields)) {
      const { confirm: _confirm, ...first } = fields;
      const shown = await this.postOnce(path, first, headers);
      const seen = seenIn(shown.text);
      return this.postOnce(path, seen === null ? fields : { ...fields, seen }, headers);
    }
    return this.postOnce(path, fields, headers);
  }

  /** One form POST, exactly the fields given (and the CSRF token unless given). */
  postOnce(
    path: string,
    fields: Record<string, string | string[]> = {},
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    const body = new URLSearchParams();
    if (this.csrf !== null && !("csrf" in fields)) body.append("csrf", this.csrf);
    for (const [name, value] of Object.entries(fields))
      for (const v of Array.isArray(value) ? value : [value]) body.append(name, v);
    return this.request("POST", path, {
      body,
      headers: { origin: this.base, "sec-fetch-site": "same-origin", ...headers },
    });
  }

  /** Signs in with `token` (as `operator` when given); keeps the cookie on success. */
  async login(token = TOKEN, operator?: string): Promise<Answer> {
    const body = new URLSearchParams({ token, ...(operator !== undefined ? { operator } : {}) });
    const answer = await this.request("POST", "/console/login", {
      body,
      headers: { origin: this.base, "sec-fetch-site": "same-origin" },
      cookie: null,
    });
    const set = answer.headers.get("set-cookie");
    if (answer.status === 303 && set !== null) {
      this.cookie = set.split(";")[0]!;
      await this.get("/console/");
    }
    return answer;
  }
}

/** The security headers every console response carries. */
export function expectSecurityHeaders(headers: Headers): void {
  expect({
    csp: headers.get("content-security-policy"),
    nosniff: headers.get("x-content-type-options"),
    referrer: headers.get("referrer-policy"),
    cache: headers.get("cache-control"),
  }).toEqual({ csp: CSP, nosniff: "nosniff", referrer: "same-origin", cache: "no-store" });
}

/** The digest a confirmation's form carries (`seen`), or null. */
export function seenIn(html: string): string | null {
  return /name="seen" value="([0-9a-f]{64})"/.exec(html)?.[1] ?? null;
}

let nextRpcId = 1;

/** One JSON-RPC request over a client's WebSocket to the rig's server; resolves with its answer. */
export function rpcOver(ws: WebSocket, method: string, params: unknown): Promise<Record<string, unknown>> {
  const id = nextRpcId++;
  return new Promise((resolve) => {
    const onMessage = (data: Buffer) => {
      const message = JSON.parse(data.toString()) as Record<string, unknown>;
      if (message["id"] !== id) return;
      ws.off("message", onMessage);
      resolve(message);
    };
    ws.on("message", onMessage);
    ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}
