/**
 * HTTP services over `tether serve` (a real HTTP client on loopback, the
 * server in this process, real jailed daemon satellites behind it): a JSON and
 * an HTML route answering; the serve token required (401, no detail); an
 * extension turned off globally not mounted (404, naming nothing); a throw is
 * 502 and a hang 504, with fixed bodies; a body past the bound is 413 before
 * the satellite sees it; a slow body 408; the rate limit 429 with Retry-After;
 * cookies and hop-by-hop headers dropped both ways; the ledger row.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";
import { createLogger, silentLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { envOptions } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";

const TOKEN = "s".repeat(64);
const SLOW = 120_000;
let tmp: string;
let broker: Broker;
let server: ServeServer;
/** The pages listener's port: `/ext/` is answered there only. */
let port: number;
/** The API's and the console's port. */
let apiPort: number;

interface Got {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request; `body` is sent whole, `slowBody` only in part (the rest never comes). */
function send(
  method: string,
  path: string,
  options: {
    token?: string | null;
    headers?: Record<string, string>;
    body?: string;
    partial?: string;
    port?: number;
  } = {},
): Promise<Got> {
  return new Promise((resolve, reject) => {
    const token = options.token === undefined ? TOKEN : options.token;
    const headers: Record<string, string> = {
      ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
      ...options.headers,
    };
    const req = httpRequest({ host: "127.0.0.1", port: options.port ?? port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    req.on("error", reject);
    if (options.partial !== undefined) req.write(options.partial);
    else req.end(options.body);
  });
}

function serviceRows(): Array<{ session_id: string; extension: string; kind: string; name: string; outcome: string }> {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare("select session_id, extension, kind, name, outcome from invocations where kind = 'service' order by id")
    .all() as never;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-services-"));
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: createLogger({ level: "error" }) });
  writeFileSync(join(broker.home, "policy.toml"), "");
  for (const name of ["notes", "hidden"]) {
    const { installed } = await broker.registry.install(join(REPO, "tests/integration/fixtures/services", name));
    broker.registry.approve(installed.name);
  }
  new Preferences(broker.store).setGlobal("hidden", false);
  server = new ServeServer({ broker, token: TOKEN, log: silentLogger, say: () => {}, serviceBodyMs: 1_000 });
  const { url, pages } = await server.listen({ port: 0 });
  port = Number(new URL(pages).port);
  apiPort = Number(new URL(url).port);
}, SLOW);

afterAll(async () => {
  await server?.shutdown(Promise.resolve());
  rmSync(tmp, { recursive: true, force: true });
});

test(
  "extension pages never share the console's origin: the API's listener answers /ext/ with a pointer only, the pages' listener serves nothing else",
  async () => {
    expect(port).not.toBe(apiPort);
    for (const path of ["/ext/notes/notes/page", "/ext/notes/notes/all", "/ext/notes/upload"]) {
      const onApi = await send("GET", path, { port: apiPort });
      expect([path, onApi.status]).toEqual([path, 404]);
      expect(onApi.body).toBe(
        `Extension pages are served on their own origin: http://127.0.0.1:${port}/ext/<name>/… (docs/services.md)\n`,
      );
      expect(onApi.headers["content-type"]).toBe("text/plain; charset=utf-8");
    }
    for (const path of ["/console/", "/console/login", "/", "/ext"])
      expect([path, (await send("GET", path)).status]).toEqual([path, 404]);
    // No WebSocket on the pages' listener: the API is not reachable from a page's origin.
    const upgraded = await send("GET", "/", {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    }).catch((err: Error) => err.message);
    expect(typeof upgraded === "string" ? upgraded : upgraded.status).not.toBe(101);
  },
  SLOW,
);

test(
  "a JSON route answers; cookies, credentials and hop-by-hop headers are dropped both ways; the ledger has the row",
  async () => {
    const got = await send("GET", "/ext/notes/notes/all?x=1", {
      headers: { cookie: "session=abc", "x-asked": "yes", connection: "keep-alive" },
    });
    expect(got.status).toBe(200);
    expect(got.headers["content-type"]).toBe("application/json");
    const body = JSON.parse(got.body) as { notes: string[]; path: string; query: string; saw: string[] };
    expect(body).toMatchObject({ notes: ["milk"], path: "/notes/all", query: "x=1" });
    expect(body.saw).toContain("x-asked");
    for (const hidden of ["authorization", "cookie", "connection"]) expect(body.saw).not.toContain(hidden);
    // What the service set that the client may not get.
    expect(got.headers["set-cookie"]).toBeUndefined();
    expect(got.headers["x-private"]).toBeUndefined();
    // Node sets its own Keep-Alive for the connection; the service's never goes out.
    expect(got.headers["keep-alive"]).not.toBe("timeout=999");
    expect(got.headers["connection"]).not.toBe("x-private");
    expect(got.headers["x-kept"]).toBe("yes");
    expect(serviceRows()).toContainEqual({
      session_id: "@daemon",
      extension: "notes",
      kind: "service",
      name: "notes",
      outcome: "ok",
    });
  },
  SLOW,
);

test(
  "a page's headers pass an allowlist and the broker's own always go out: an opaque origin (CSP sandbox, no allow-same-origin), no cookie, no Clear-Site-Data, no Refresh, no CORS, no javascript: Location",
  async () => {
    const got = await send("GET", "/ext/notes/notes/hostile");
    expect(got.status).toBe(200);
    expect(got.headers["content-security-policy"]).toBe(
      "sandbox allow-scripts allow-forms allow-popups allow-downloads; frame-ancestors 'none'",
    );
    for (const name of [
      "set-cookie",
      "clear-site-data",
      "refresh",
      "location",
      "access-control-allow-origin",
      "access-control-allow-credentials",
      "cross-origin-opener-policy",
      "service-worker-allowed",
    ]) {
      expect([name, got.headers[name]]).toEqual([name, undefined]);
    }
    expect(got.headers["x-frame-options"]).toBeUndefined();
    expect(got.headers["x-content-type-options"]).toBe("nosniff");
    expect(got.headers["x-own"]).toBe("kept");
    // A Location to a path of this server or an http(s) URL is kept; a scheme-relative one is not.
    expect((await send("GET", "/ext/notes/notes/hostile?ok")).headers["location"]).toBe("/ext/notes/notes/page");
    expect((await send("GET", "/ext/notes/notes/hostile?abs")).headers["location"]).toBe("https://example.test/x");
    expect((await send("GET", "/ext/notes/notes/hostile?proto")).headers["location"]).toBeUndefined();
  },
  SLOW,
);

test(
  "an HTML route answers",
  async () => {
    const got = await send("GET", "/ext/notes/notes/page");
    expect(got).toMatchObject({ status: 200, body: "<h1>Notes</h1><ul><li>milk</li></ul>" });
    expect(got.headers["content-type"]).toBe("text/html; charset=utf-8");
  },
  SLOW,
);

test(
  "without the serve token: 401 with no detail",
  async () => {
    for (const token of [null, "wrong".repeat(13)]) {
      const got = await send("GET", "/ext/notes/notes/all", { token });
      expect(got).toMatchObject({ status: 401, body: "" });
      expect(got.headers["www-authenticate"]).toBe('Bearer realm="tether"');
    }
  },
  SLOW,
);

test(
  "an extension turned off globally, an unknown one and an unknown path are the same 404, naming nothing",
  async () => {
    const answers = await Promise.all(
      ["/ext/hidden/", "/ext/nobody/x", "/ext/notes/nothing", "/ext/notes/../hidden/"].map((path) => send("GET", path)),
    );
    for (const got of answers) expect(got).toMatchObject({ status: 404, body: "Not found\n" });
    expect(serviceRows().some((r) => r.extension === "hidden")).toBe(false);
  },
  SLOW,
);

test(
  "a route that throws is 502 with the fixed body; one that hangs is 504",
  async () => {
    const boom = await send("GET", "/ext/notes/boom");
    expect(boom).toMatchObject({ status: 502, body: "The service failed\n" });
    const late = await send("GET", "/ext/notes/late");
    expect(late).toMatchObject({ status: 504, body: "The service did not answer in time\n" });
    const rows = serviceRows();
    expect(rows.find((r) => r.name === "boom")?.outcome).not.toBe("ok");
    expect(rows.find((r) => r.name === "late")?.outcome).not.toBe("ok");
  },
  SLOW,
);

test(
  "a body within the bound is handed over; past it is 413 and the satellite never sees it; a slow body is 408",
  async () => {
    expect(
      await send("POST", "/ext/notes/upload", { body: "x".repeat(100), headers: { "content-type": "text/plain" } }),
    ).toMatchObject({ status: 201, body: '{"bytes":100,"encoding":"text"}' });
    const before = serviceRows().filter((r) => r.name === "upload").length;
    expect(await send("POST", "/ext/notes/upload", { body: "x".repeat(2000) })).toMatchObject({
      status: 413,
      body: "Request body too large\n",
    });
    // Chunked, no length declared: refused once the bound is passed.
    expect(
      await send("POST", "/ext/notes/upload", { body: "y".repeat(5000), headers: { "transfer-encoding": "chunked" } }),
    ).toMatchObject({ status: 413 });
    expect(
      await send("POST", "/ext/notes/upload", { partial: "z".repeat(10), headers: { "content-length": "500" } }),
    ).toMatchObject({ status: 408, body: "Request body too slow\n" });
    expect(serviceRows().filter((r) => r.name === "upload").length).toBe(before);
    // A method the route does not take.
    expect(await send("GET", "/ext/notes/upload")).toMatchObject({ status: 405 });
  },
  SLOW,
);

test(
  "past the route's rate: 429 with Retry-After",
  async () => {
    expect((await send("GET", "/ext/notes/limited")).status).toBe(200);
    expect((await send("GET", "/ext/notes/limited")).status).toBe(200);
    const third = await send("GET", "/ext/notes/limited");
    expect(third).toMatchObject({ status: 429, body: "Too many requests\n" });
    expect(Number(third.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  },
  SLOW,
);

test("review lists each route with its methods, path, rate and bound", () => {
  const installed = broker.registry.get("notes")!;
  const text = renderReview(
    buildReview(installed, broker.registry.status(installed), broker.registry.latestApproval("notes")),
    installed,
  );
  expect(text).toContain(
    "It serves HTTP: GET /ext/notes/notes/* — The notes as JSON, or as a small HTML page at /notes/page.",
  );
  expect(text).toContain(
    "It serves HTTP: POST /ext/notes/upload — Takes a small body and says its size. (runs as a daemon satellite; sees each request's path, query, headers and body, never cookies or the token; 60/min, bodies up to 1024 bytes)",
  );
});
