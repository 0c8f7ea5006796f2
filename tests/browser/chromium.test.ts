/**
 * The real browser, and what the operator console's defences rely on it doing
 * (docs/browser-tests.md), against loopback HTTP servers started here (code
 * run in the page is written as strings: the project's types have no DOM):
 *
 * - the test browser itself: Chromium's sandbox on except as root, and nothing
 *   but loopback reachable (tests/support/browser.ts);
 * - the console's Content-Security-Policy: a same-origin script and style
 *   apply; an inline `<script>` and `<style>` in the same page do not, and the
 *   page hears a `securitypolicyviolation` (Chromium logs it too);
 *   `frame-ancestors 'none'` keeps the page out of another site's frame;
 * - a `SameSite=Strict; HttpOnly` cookie: sent on a same-origin navigation,
 *   never readable from `document.cookie`;
 * - a form posted from another site (127.0.0.2, another port) arrives with that
 *   site's `Origin`, `Sec-Fetch-Site: cross-site` and without the Strict
 *   cookie; posted from the page itself, with its own `Origin`, `same-origin`
 *   and the cookie. And one the console must not overlook: from another port of
 *   127.0.0.1 — another local web server — the post is `same-site` and DOES
 *   carry the Strict cookie (cookies are not scoped by port), so only the
 *   `Origin` / `Sec-Fetch-Site: same-origin` check and the CSRF token refuse it.
 */
import { afterAll, beforeAll, describe, expect, test } from "@jest/globals";
import { existsSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { screenshot, useBrowser } from "../support/browser.js";
import { until } from "../support/wait.js";

/** The console's policy (the page contract), minus what these pages do not load. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

interface Site {
  /** `http://host:port` */
  readonly origin: string;
  /** Every request it answered, in order (favicon requests left out). */
  readonly seen: Seen[];
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A loopback HTTP server on a free port of `host`, recording what it was sent. */
function site(host: string, handle: Handler): Promise<Site> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/favicon.ico") {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method ?? "", path, headers: req.headers, body });
      handle(req, res, body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", (err) => reject(new Error(`cannot listen on ${host}: ${err.message}`)));
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        origin: `http://${host}:${port}`,
        seen,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

const html = (res: ServerResponse, body: string, headers: Record<string, string | string[]> = {}) => {
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...headers });
  res.end(
    `<!doctype html><html><head><meta charset="utf-8"><title>browser test</title></head><body>${body}</body></html>`,
  );
};

/** The console's server, in miniature: strict CSP, a session cookie, a form endpoint. */
const consoleLike: Handler = (req, res) => {
  const path = new URL(req.url ?? "/", "http://x").pathname;
  const csp = { "content-security-policy": CSP };
  switch (path) {
    case "/console/csp":
      return html(
        res,
        [
          '<link rel="stylesheet" href="/console/assets/page.css">',
          "<h1>CSP</h1>",
          '<p id="styled">styled by the same-origin sheet</p>',
          '<p id="inline-styled">an inline style would make this red</p>',
          '<p id="external">not run</p>',
          '<ul id="violations"></ul>',
          '<script src="/console/assets/page.js"></script>',
          '<script>document.body.dataset.inline = "ran"; document.getElementById("external").textContent = "overwritten inline";</script>',
          "<style>#inline-styled { color: rgb(255, 0, 0); }</style>",
        ].join("\n"),
        csp,
      );
    case "/console/assets/page.js":
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8", ...csp });
      // Listens before the inline script is reached: the violations it hears go into the page.
      return void res.end(`
        document.addEventListener("securitypolicyviolation", (e) => {
          const li = document.createElement("li");
          li.textContent = e.violatedDirective + " " + e.blockedURI;
          document.getElementById("violations").append(li);
        });
        document.getElementById("external").textContent = "ran";
      `);
    case "/console/assets/page.css":
      res.writeHead(200, { "content-type": "text/css; charset=utf-8", ...csp });
      return void res.end("#styled { color: rgb(0, 128, 0); }\n");
    case "/console/login":
      return html(res, '<p>signed in</p><a id="next" href="/console/whoami">next</a>', {
        ...csp,
        "set-cookie": [
          "tether_console=s3cr3t-session; HttpOnly; SameSite=Strict; Path=/console",
          "shown=1; SameSite=Strict; Path=/console",
        ],
      });
    case "/console/whoami":
    case "/console/action":
      return html(res, `<p id="done">${path}</p>`, csp);
    case "/console/form":
      return html(
        res,
        '<form id="f" method="post" action="/console/action"><input type="hidden" name="csrf" value="own"><button id="go" type="submit">go</button></form>',
        csp,
      );
  }
  res.writeHead(404, { "content-type": "text/plain" }).end("no such page\n");
};

/** Another site's page: a form aimed at the console, and the console in a frame. */
const attacker =
  (target: () => string): Handler =>
  (req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/form")
      return html(
        res,
        `<form method="post" action="${target()}/console/action"><input type="hidden" name="csrf" value="forged"><button id="go" type="submit">win a prize</button></form>`,
      );
    if (path === "/frame") return html(res, `<iframe id="framed" src="${target()}/console/whoami"></iframe>`);
    res.writeHead(404).end();
  };

const browser = useBrowser();
let server: Site;
/** Another site: another loopback address (127.0.0.2), another port. */
let crossSite: Site;
/** Another local web server: 127.0.0.1 too, another port. */
let otherPort: Site;

beforeAll(async () => {
  server = await site("127.0.0.1", consoleLike);
  crossSite = await site(
    "127.0.0.2",
    attacker(() => server.origin),
  );
  otherPort = await site(
    "127.0.0.1",
    attacker(() => server.origin),
  );
});

afterAll(async () => {
  await Promise.all([server, crossSite, otherPort].filter((s) => s !== undefined).map((s) => s.close()));
});

const posts = (s: Site) => s.seen.filter((r) => r.method === "POST" && r.path === "/console/action");

test("Chromium's own sandbox is on, except as root (where it cannot start)", async () => {
  const page = await browser.page();
  await page.goto("chrome://sandbox");
  const status = (await page.locator("body").innerText()).replace(/\s+/g, " ");
  if (process.getuid?.() === 0) expect(status).toContain("You are NOT adequately sandboxed");
  else expect(status).toContain("You are adequately sandboxed");
});

test("Chromium reaches loopback only: anything else goes to a proxy where nothing listens", async () => {
  for (const url of ["http://example.com/", "http://192.0.2.1/", "https://10.0.0.1/"]) {
    await expect((await browser.page()).goto(url)).rejects.toThrow("net::ERR_PROXY_CONNECTION_FAILED");
  }
  await expect((await browser.page()).goto(`${server.origin}/console/whoami`).then((r) => r?.status())).resolves.toBe(
    200,
  );
});

describe("the console's Content-Security-Policy", () => {
  test("runs the same-origin script and sheet; refuses the inline script and style, and the page hears it", async () => {
    const page = await browser.page();
    const logged: string[] = [];
    page.on("console", (m) => logged.push(`${m.type()}: ${m.text()}`));
    const response = await page.goto(`${server.origin}/console/csp`);
    expect(response?.headers()["content-security-policy"]).toBe(CSP);

    // The same-origin script ran (and the inline one did not overwrite its text).
    await expect(page.textContent("#external")).resolves.toBe("ran");
    await expect(page.evaluate("document.body.dataset.inline ?? null")).resolves.toBeNull();
    // The same-origin sheet applies; the inline <style> does not.
    const color = (selector: string) =>
      page.evaluate(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).color`);
    await expect(color("#styled")).resolves.toBe("rgb(0, 128, 0)");
    await expect(color("#inline-styled")).resolves.toBe("rgb(0, 0, 0)");

    // Both refusals reached the page as securitypolicyviolation events…
    await page.waitForFunction('document.querySelectorAll("#violations li").length >= 2');
    const violations = await page.locator("#violations li").allTextContents();
    expect(violations).toEqual(expect.arrayContaining(["script-src-elem inline", "style-src-elem inline"]));
    // …and Chromium reported them on the console (its wording changes between versions:
    // "Refused to execute inline script because it violates …", "Executing inline script violates …").
    const reported = (what: RegExp) => logged.some((l) => l.startsWith("error: ") && what.test(l));
    expect(
      reported(/inline script.*violates the following Content Security Policy directive 'script-src 'self''/i),
    ).toBe(true);
    expect(reported(/inline style.*violates the following Content Security Policy directive 'style-src 'self''/i)).toBe(
      true,
    );

    const shot = await screenshot(page, "chromium-csp");
    expect(existsSync(shot)).toBe(true);
  });

  test("frame-ancestors 'none': another site cannot frame the page", async () => {
    const page = await browser.page();
    const logged: string[] = [];
    page.on("console", (m) => logged.push(m.text()));
    await page.goto(`${crossSite.origin}/frame`);
    const framed = await page.waitForSelector("#framed");
    const frame = await framed.contentFrame();
    // Chromium fetched it, refused to show it, and said why.
    await until("Chromium's frame-ancestors refusal on the console", () =>
      logged.some((l) => l.includes("frame-ancestors 'none'")),
    );
    expect(server.seen.some((r) => r.path === "/console/whoami" && r.headers["sec-fetch-dest"] === "iframe")).toBe(
      true,
    );
    expect(frame).not.toBeNull();
    await expect(frame!.$("#done")).resolves.toBeNull();
  });
});

describe("the session cookie and requests from elsewhere", () => {
  /** Signs in: the login page sets the HttpOnly Strict session cookie (and a readable one, to show document.cookie works). */
  async function signIn() {
    const page = await browser.page();
    await page.goto(`${server.origin}/console/login`);
    return page;
  }

  test("a SameSite=Strict; HttpOnly cookie goes with a same-origin navigation and is hidden from scripts", async () => {
    const page = await signIn();
    // Scripts see the other cookie, not the HttpOnly one.
    await expect(page.evaluate("document.cookie")).resolves.toBe("shown=1");
    await Promise.all([page.waitForURL(`${server.origin}/console/whoami`), page.click("#next")]);
    const whoami = server.seen.filter((r) => r.path === "/console/whoami").at(-1);
    expect(whoami?.headers.cookie).toContain("tether_console=s3cr3t-session");
    expect(whoami?.headers["sec-fetch-site"]).toBe("same-origin");
    // The browser holds it as set.
    const [cookie] = (await browser.context().cookies(`${server.origin}/console/`)).filter(
      (c) => c.name === "tether_console",
    );
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console", secure: false });
  });

  test("a form posted from the page itself: its own Origin, Sec-Fetch-Site same-origin, the cookie", async () => {
    const page = await signIn();
    await page.goto(`${server.origin}/console/form`);
    const before = posts(server).length;
    await Promise.all([page.waitForURL(`${server.origin}/console/action`), page.click("#go")]);
    const post = posts(server).slice(before);
    expect(post).toHaveLength(1);
    expect(post[0]!.headers.origin).toBe(server.origin);
    expect(post[0]!.headers["sec-fetch-site"]).toBe("same-origin");
    expect(post[0]!.headers.cookie).toContain("tether_console=s3cr3t-session");
    expect(post[0]!.body).toBe("csrf=own");
  });

  test("a form posted from another site: that site's Origin, Sec-Fetch-Site cross-site, no Strict cookie", async () => {
    const page = await signIn();
    await page.goto(`${crossSite.origin}/form`);
    const before = posts(server).length;
    await Promise.all([page.waitForURL(`${server.origin}/console/action`), page.click("#go")]);
    const post = posts(server).slice(before);
    expect(post).toHaveLength(1);
    expect(post[0]!.headers.origin).toBe(crossSite.origin);
    expect(post[0]!.headers["sec-fetch-site"]).toBe("cross-site");
    expect(post[0]!.headers.cookie ?? "").not.toContain("tether_console");
    expect(post[0]!.body).toBe("csrf=forged");
    await screenshot(page, "chromium-cross-site-post");
  });

  test("a form posted from another port of 127.0.0.1: same-site, and the Strict cookie goes with it", async () => {
    const page = await signIn();
    await page.goto(`${otherPort.origin}/form`);
    const before = posts(server).length;
    await Promise.all([page.waitForURL(`${server.origin}/console/action`), page.click("#go")]);
    const post = posts(server).slice(before);
    expect(post).toHaveLength(1);
    // Sites ignore ports: SameSite=Strict does not stop this one, the Origin check must.
    expect(post[0]!.headers.origin).toBe(otherPort.origin);
    expect(post[0]!.headers.origin).not.toBe(server.origin);
    expect(post[0]!.headers["sec-fetch-site"]).toBe("same-site");
    expect(post[0]!.headers.cookie).toContain("tether_console=s3cr3t-session");
  });
});
