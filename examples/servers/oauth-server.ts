/**
 * A real OAuth 2.0 authorization server on loopback (node:http), small enough
 * to read: the login tests and `make demo` sign in to it. It implements what the broker's sign-ins speak:
 *
 *   GET  /authorize     auto-approves: redirects to redirect_uri with code and state
 *                       (knobs: a different state, an error), and records the request
 *   POST /token         authorization_code (PKCE S256 checked, codes single-use),
 *                       device_code (pending for N polls, then approved, denied, expired,
 *                       or slow_down once), refresh_token (rotating: each used once)
 *   POST /device/code   a device code and a user code
 *   POST /revoke        RFC 7009, answers an empty 200
 *
 * `failNext` makes the next token request fail one way (500, invalid_grant,
 * non-JSON, oversized). Every value it issues is kept in `issued`, so a test
 * can search output for any of them.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type TokenFailure = "500" | "invalid_grant" | "not_json" | "oversized" | "echo_code";
export type DeviceOutcome = "approve" | "deny" | "expire" | "slow_down_once";

interface CodeGrant {
  readonly challenge: string;
  readonly redirectUri: string;
  readonly clientId: string;
  used: boolean;
}

interface DeviceGrant {
  polls: number;
  slowedDown: boolean;
}

export interface OAuthServer {
  readonly url: string;
  /** Every secret value issued: codes, device codes, access and refresh tokens. */
  readonly issued: string[];
  /** Tokens revoked at /revoke. */
  readonly revoked: string[];
  /** Each request's path and form (or query), in order. */
  readonly requests: Array<{ path: string; params: Record<string, string> }>;
  /** Knobs, set by tests. */
  knobs: {
    expiresIn: number | null;
    /** Whether token answers carry a refresh token. */
    refresh: boolean;
    /** Polls answered authorization_pending before the device outcome. */
    pendingPolls: number;
    deviceOutcome: DeviceOutcome;
    deviceExpiresIn: number;
    interval: number;
    /** Redirect with this state instead of the request's. */
    wrongState: string | null;
    /** Redirect with error=... instead of a code. */
    authorizeError: string | null;
  };
  /** The next token request fails so (null: it does not). */
  failNext(how: TokenFailure | null): void;
  close(): Promise<void>;
}

const s256 = (verifier: string) => createHash("sha256").update(verifier, "ascii").digest("base64url");

async function formOf(req: IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8")));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

/** `port` 0 (the tests) picks a free one; the demo names the one its manifest does. */
export async function startOAuthServer(port = 0): Promise<OAuthServer> {
  const codes = new Map<string, CodeGrant>();
  const devices = new Map<string, DeviceGrant>();
  const refreshTokens = new Set<string>();
  let failure: TokenFailure | null = null;
  const fresh = (prefix: string) => {
    const value = `${prefix}-${randomBytes(12).toString("hex")}`;
    server.issued.push(value);
    return value;
  };
  const tokens = (res: ServerResponse) => {
    const refresh = server.knobs.refresh ? fresh("rt") : null;
    if (refresh !== null) refreshTokens.add(refresh);
    json(res, 200, {
      access_token: fresh("at"),
      token_type: "bearer",
      ...(server.knobs.expiresIn !== null ? { expires_in: server.knobs.expiresIn } : {}),
      ...(refresh !== null ? { refresh_token: refresh } : {}),
      scope: "repo:read",
    });
  };

  const http = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const params = req.method === "POST" ? await formOf(req) : Object.fromEntries(url.searchParams);
      server.requests.push({ path: url.pathname, params });
      if (req.method === "GET" && url.pathname === "/authorize") {
        const redirect = new URL(params["redirect_uri"] ?? "");
        if (server.knobs.authorizeError !== null) {
          redirect.searchParams.set("error", server.knobs.authorizeError);
        } else {
          if (params["code_challenge_method"] !== "S256" || params["response_type"] !== "code")
            return json(res, 400, { error: "invalid_request" });
          const code = fresh("code");
          codes.set(code, {
            challenge: params["code_challenge"] ?? "",
            redirectUri: params["redirect_uri"] ?? "",
            clientId: params["client_id"] ?? "",
            used: false,
          });
          redirect.searchParams.set("code", code);
        }
        redirect.searchParams.set("state", server.knobs.wrongState ?? params["state"] ?? "");
        res.writeHead(302, { location: redirect.toString() });
        return res.end();
      }
      if (req.method === "POST" && url.pathname === "/device/code") {
        const deviceCode = fresh("dc");
        devices.set(deviceCode, { polls: 0, slowedDown: false });
        return json(res, 200, {
          device_code: deviceCode,
          user_code: "WDJB-MJHT",
          verification_uri: `${server.url}/device`,
          verification_uri_complete: `${server.url}/device?user_code=WDJB-MJHT`,
          expires_in: server.knobs.deviceExpiresIn,
          interval: server.knobs.interval,
        });
      }
      if (req.method === "POST" && url.pathname === "/revoke") {
        server.revoked.push(params["token"] ?? "");
        res.writeHead(200);
        return res.end();
      }
      if (req.method === "POST" && url.pathname === "/token") {
        const fail = failure;
        failure = null;
        if (fail === "500") return json(res, 500, { message: "internal" });
        if (fail === "invalid_grant")
          return json(res, 400, { error: "invalid_grant", error_description: "The grant is invalid" });
        if (fail === "not_json") {
          res.writeHead(502, { "content-type": "text/html" });
          return res.end(`<html>bad gateway ${params["code"] ?? params["refresh_token"] ?? ""}</html>`);
        }
        if (fail === "oversized") return json(res, 200, { access_token: "x".repeat(200_000), token_type: "bearer" });
        if (fail === "echo_code")
          return json(res, 400, {
            error: "invalid_grant",
            error_description: `code ${params["code"] ?? params["refresh_token"] ?? ""} is bad`,
          });
        switch (params["grant_type"]) {
          case "authorization_code": {
            const grant = codes.get(params["code"] ?? "");
            if (grant === undefined)
              return json(res, 400, { error: "invalid_grant", error_description: "Unknown authorization code" });
            if (grant.used)
              return json(res, 400, { error: "invalid_grant", error_description: "Authorization code already used" });
            grant.used = true;
            if (grant.redirectUri !== params["redirect_uri"] || grant.clientId !== params["client_id"])
              return json(res, 400, {
                error: "invalid_grant",
                error_description: "redirect_uri or client_id mismatch",
              });
            if (s256(params["code_verifier"] ?? "") !== grant.challenge)
              return json(res, 400, { error: "invalid_grant", error_description: "PKCE verification failed" });
            return tokens(res);
          }
          case "urn:ietf:params:oauth:grant-type:device_code": {
            const grant = devices.get(params["device_code"] ?? "");
            if (grant === undefined) return json(res, 400, { error: "invalid_grant" });
            grant.polls++;
            if (server.knobs.deviceOutcome === "slow_down_once" && !grant.slowedDown) {
              grant.slowedDown = true;
              return json(res, 400, { error: "slow_down" });
            }
            if (grant.polls <= server.knobs.pendingPolls) return json(res, 400, { error: "authorization_pending" });
            if (server.knobs.deviceOutcome === "deny") return json(res, 400, { error: "access_denied" });
            if (server.knobs.deviceOutcome === "expire") return json(res, 400, { error: "expired_token" });
            devices.delete(params["device_code"] ?? "");
            return tokens(res);
          }
          case "refresh_token": {
            const token = params["refresh_token"] ?? "";
            if (!refreshTokens.delete(token))
              return json(res, 400, {
                error: "invalid_grant",
                error_description: "Refresh token unknown or already used",
              });
            return tokens(res);
          }
          default:
            return json(res, 400, { error: "unsupported_grant_type" });
        }
      }
      res.writeHead(404);
      res.end();
    })().catch(() => {
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", resolve);
  });
  const server: OAuthServer = {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    issued: [],
    revoked: [],
    requests: [],
    knobs: {
      expiresIn: 3600,
      refresh: true,
      pendingPolls: 0,
      deviceOutcome: "approve",
      deviceExpiresIn: 600,
      interval: 5,
      wrongState: null,
      authorizeError: null,
    },
    failNext: (how) => void (failure = how),
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
  return server;
}
