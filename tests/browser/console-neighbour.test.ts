/**
 * A hostile page on another port of 127.0.0.1 (the same site to the browser,
 * so the Strict cookie goes along) against a signed-in operator, in a real
 * Chromium: it frames the console (clickjacking), posts forms from a
 * sandboxed frame (`Origin: null`), as `text/plain` and as
 * `multipart/form-data`, each auto-submitted by script. The frame shows no
 * console, every post is refused, and the approval stands.
 */
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { useBrowser } from "../support/browser.js";

const TOKEN = "console-neighbour-token-0123456789abcdef";
const browser = useBrowser();
let tmp: string;
let broker: Broker;
let server: ServeServer;
let consoleUrl: string;
let neighbour: Server;
let neighbourUrl: string;

const form = (enctype: string, target = "_self") =>
  `<form method="POST" action="CONSOLE/ext/echo/revoke" enctype="${enctype}" target="${target}"><input name="confirm" value="yes"><input name="csrf" value="guessed"></form><script>addEventListener("load", () => document.forms[0].submit())</script>`;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-console-neighbour-"));
  const home = join(tmp, "home");
  broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }), extensionLogs: false });
  writeFileSync(join(home, "policy.toml"), "");
  await broker.registry.install(join(REPO, "manifests/echo"));
  broker.registry.approve("echo", { by: "op" });
  server = new ServeServer({ broker, token: TOKEN, log: createLogger({ level: "error" }), say: () => {} });
  const { url } = await server.listen({ port: 0 });
  consoleUrl = `http://127.0.0.1:${new URL(url).port}/console`;
  const pages: Record<string, string> = {
    "/frame": `<iframe id="f" src="${consoleUrl}/ext/echo" width="800" height="600"></iframe>`,
    // The sandboxed frame's form navigates the top window (its post has `Origin: null`, and the browser's requests stay observable).
    "/sandboxed": `<iframe sandbox="allow-forms allow-scripts allow-top-navigation" srcdoc="${form("application/x-www-form-urlencoded", "_top").replace(/"/g, "&quot;")}"></iframe>`,
    "/plain": form("text/plain"),
    "/multipart": form("multipart/form-data"),
  };
  neighbour = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html>${(pages[req.url ?? ""] ?? "").replace(/CONSOLE/g, consoleUrl)}`);
  });
  await new Promise<void>((resolve) => neighbour.listen(0, "127.0.0.1", resolve));
  neighbourUrl = `http://127.0.0.1:${(neighbour.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await server?.shutdown(Promise.resolve());
  await broker?.destroy().catch(() => {});
  await new Promise((r) => neighbour?.close(r));
  rmSync(tmp, { recursive: true, force: true });
});

/** How the request for `url` ended: its answer's status, or "blocked" (a frame refused by the answer's headers, after they came). */
function endOf(page: Page, url: string): Promise<number | "blocked"> {
  return new Promise((resolve) => {
    page.on(
      "requestfinished",
      (r) => void (r.url() === url && r.response().then((res) => resolve(res?.status() ?? 0))),
    );
    page.on("requestfailed", (r) => r.url() === url && resolve("blocked"));
  });
}

async function signIn() {
  const page = await browser.page();
  await page.goto(`${consoleUrl}/login`);
  await page.fill("input[name=token]", TOKEN);
  await Promise.all([page.waitForURL(`${consoleUrl}/`), page.click("form#login button[type=submit]")]);
  return page;
}

test("framed by a neighbour's page, the console does not render", async () => {
  const page = await signIn();
  // The framed document ends blocked by its answer's X-Frame-Options / frame-ancestors (or, were it not, loaded): wait for whichever.
  const ended = endOf(page, `${consoleUrl}/ext/echo`);
  await page.goto(`${neighbourUrl}/frame`);
  expect(await ended).toBe("blocked");
  await page.waitForLoadState("load");
  const frame = page.frames().find((f) => f !== page.mainFrame())!;
  // Refused by frame-ancestors / X-Frame-Options: the frame holds Chromium's error page, not the review.
  const shown = await frame.evaluate(() => ({
    forms: document.querySelectorAll("form#revoke, form#uninstall").length,
    text: document.body?.innerText ?? "",
  }));
  expect(shown.forms).toBe(0);
  expect(shown.text).not.toContain("Tether console");
});

test.each(["/sandboxed", "/plain", "/multipart"])(
  "a form auto-posted from the neighbour's %s page is refused and changes nothing",
  async (path) => {
    const page = await signIn();
    const before = broker.registry.latestApproval("echo");
    // The post ends either answered (401, 403, 415) or, in a frame, blocked by the answer's X-Frame-Options after it came: wait for whichever.
    const ended = endOf(page, `${consoleUrl}/ext/echo/revoke`);
    await page.goto(`${neighbourUrl}${path}`, { waitUntil: "commit" });
    const status = await ended;
    // Each posts from a top window here, so it is answered, not blocked: 401 (no cookie sent), 403 (the origin check) or 415 (not a urlencoded form).
    expect([path, status !== "blocked" && [401, 403, 415].includes(status)]).toEqual([path, true]);
    expect(broker.registry.latestApproval("echo")).toEqual(before);
    expect(before?.revokedAt).toBeNull();
  },
);
