/**
 * The loopback redirect listener of an authorization-code sign-in (RFC 8252
 * §7.3): 127.0.0.1 on a port the system picks, one path, `/callback`. A
 * request whose `state` is not the sign-in's (compared in constant time) is
 * answered and ignored — anything on the machine can reach a loopback port,
 * and one stray request must not end the operator's sign-in — so the sign-in
 * waits, until its own deadline, for the first request that carries its
 * state; that one decides, and the browser that brought it is answered once
 * the broker knows how the sign-in ended.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BrokerCode, TetherError } from "../base/errors.js";
import { sameSecret } from "./pkce.js";

export interface Callback {
  readonly code: string;
  /** Answers the browser that brought the redirect. */
  reply(ok: boolean, text: string): void;
}

const ERROR_CODE = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

function page(res: import("node:http").ServerResponse, status: number, text: string): void {
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "cache-control": "no-store",
    connection: "close",
  });
  res.end(`${text}\n`);
}

export class LoopbackRedirect {
  readonly #server: Server;
  readonly redirectUri: string;
  /** The redirect this sign-in started; rejects on a wrong state or an error answer. */
  readonly callback: Promise<Callback>;

  /** How many redirects with a state not the sign-in's were answered and ignored (said when the sign-in times out). */
  readonly refused: () => number;

  private constructor(server: Server, port: number, callback: Promise<Callback>, refused: () => number) {
    this.#server = server;
    this.refused = refused;
    this.redirectUri = `http://127.0.0.1:${port}/callback`;
    this.callback = callback;
  }

  static async open(state: string): Promise<LoopbackRedirect> {
    let settle!: { resolve: (c: Callback) => void; reject: (e: Error) => void };
    const callback = new Promise<Callback>((resolve, reject) => (settle = { resolve, reject }));
    callback.catch(() => {});
    let decided = false;
    let refusedRedirects = 0;
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (req.method !== "GET" || url.pathname !== "/callback")
        return page(res, 404, "Not found: this listener only takes the sign-in's redirect.");
      if (decided) return page(res, 409, "This sign-in already received its redirect; you may close this tab.");
      const given = url.searchParams.get("state") ?? "";
      if (!sameSecret(given, state)) {
        refusedRedirects++;
        return page(
          res,
          400,
          "Refused: this redirect does not belong to the sign-in in progress (it goes on waiting for its own).",
        );
      }
      decided = true;
      const error = url.searchParams.get("error");
      if (error !== null) {
        const code = ERROR_CODE.test(error) ? error : "(an unreadable error code)";
        page(res, 400, `The authorization server answered ${code}; the sign-in did not complete.`);
        return settle.reject(
          new TetherError(
            BrokerCode.loginFailed,
            `the authorization server redirected with ` +
              `error ${code}${code === "access_denied" ? " (the sign-in was declined in the browser)" : ""}; ` +
              `run tether login again`,
          ),
        );
      }
      const code = url.searchParams.get("code");
      if (code === null || code === "" || code.length > 4096) {
        page(res, 400, "Refused: the redirect carries no authorization code.");
        return settle.reject(
          new TetherError(BrokerCode.loginFailed, "the redirect carried no authorization code; run tether login again"),
        );
      }
      settle.resolve({ code, reply: (ok, text) => page(res, ok ? 200 : 502, text) });
    });
    server.on("clientError", (_err, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return new LoopbackRedirect(server, (server.address() as AddressInfo).port, callback, () => refusedRedirects);
  }

  /** Stops listening and cuts any connection left (a browser's keep-alive). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
