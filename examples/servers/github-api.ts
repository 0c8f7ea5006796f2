/**
 * A GitHub-style API on loopback (node:http) for manifests/github-issues: it
 * answers only a bearer access token the OAuth server of ./oauth-server.ts
 * issued and has not revoked.
 *
 *   GET /user                       the account, and in `debug.authorization`
 *                                   the Authorization header as it arrived, so
 *                                   the broker's redaction of the echo shows
 *   GET /repos/<owner>/<repo>/issues  a fixed list of open issues
 *
 * Anything else is a 404; a missing or unknown token a 401.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { OAuthServer } from "./oauth-server.js";

export interface ApiHit {
  readonly path: string;
  readonly authorization: string | null;
}

export interface GithubApi {
  readonly url: string;
  /** Each request's path and Authorization header, in order. */
  readonly hits: ApiHit[];
  close(): Promise<void>;
}

/** The account every valid token belongs to. */
export const API_LOGIN = "octo-operator";

const ISSUES = [
  { number: 7, title: "Crash on start when the config is empty", state: "open" },
  { number: 9, title: "Docs: the install step is out of date", state: "open" },
];

/** `port` 0 (the tests) picks a free one; the demo names the one the manifest does. */
export async function startGithubApi(oauth: OAuthServer, port = 0): Promise<GithubApi> {
  const hits: ApiHit[] = [];
  const http = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    const authorization = req.headers.authorization ?? null;
    hits.push({ path, authorization });
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const token = /^Bearer (at-[0-9a-f]+)$/.exec(authorization ?? "")?.[1];
    if (token === undefined || !oauth.issued.includes(token) || oauth.revoked.includes(token))
      return answer(401, { message: "Bad credentials" });
    if (req.method === "GET" && path === "/user")
      return answer(200, { login: API_LOGIN, id: 1, debug: { authorization } });
    if (req.method === "GET" && /^\/repos\/[^/]+\/[^/]+\/issues$/.test(path)) return answer(200, ISSUES);
    return answer(404, { message: "Not Found" });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", resolve);
  });
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
