/**
 * An extension's page against the console, in a real Chromium whose every
 * request carries the serve token (as a harness UI that shows extension pages
 * would), with the operator signed in: the page is served by the pages
 * listener (another origin than the console's) and runs in an opaque origin
 * (the broker's CSP sandbox), so it reads no console page and no cookie, its
 * post to the console is refused, its frame of the console does not render,
 * and the approval stands. The console's own listener serves no extension page.
 */
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { useBrowser } from "../support/browser.js";

const TOKEN = "ext-page-serve-token-0123456789abcdef";
const browser = useBrowser({ extraHTTPHeaders: { authorization: `Bearer ${TOKEN}` } });
let tmp: string;
let broker: Broker;
let server: ServeServer;
let base: string;
let pages: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-ext-page-"));
  const home = join(tmp, "home");
  broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }), extensionLogs: false });
  writeFileSync(join(home, "policy.toml"), "");
  for (const dir of ["manifests/echo", "tests/integration/fixtures/services/notes"]) {
    const { installed } = await broker.registry.install(join(REPO, dir));
    broker.registry.approve(installed.name, { by: "op" });
  }
  server = new ServeServer({ broker, token: TOKEN, log: createLogger({ level: "error" }), say: () => {} });
  const listening = await server.listen({ port: 0 });
  base = `http://127.0.0.1:${new URL(listening.url).port}`;
  pages = listening.pages;
}, 120_000);

afterAll(async () => {
  await server?.shutdown(Promise.resolve());
  await broker?.destroy().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
});

test("a hostile extension page reads nothing of the console, posts nothing it accepts, and cannot frame it", async () => {
  const page = await browser.page();
  // The operator signs in: the console's cookie is in this browser.
  await page.goto(`${base}/console/login`);
  await page.fill("input[name=token]", TOKEN);
  await Promise.all([
    page.waitForURL(`${base}/console/`, { timeout: 20_000 }),
    page.click("form#login button[type=submit]"),
  ]);

  const before = broker.registry.latestApproval("echo");

  // Every answer the console gave the page's requests (a post that got through would show here).
  const answered: Array<[string, number]> = [];
  page.on("response", (r) => void (r.url().includes("/console/") && answered.push([r.url(), r.status()])));
  await page.goto(`${pages}/ext/notes/notes/attack?console=${encodeURIComponent(base)}`, { timeout: 30_000 });
  // Another origin than the console's, before the sandbox makes it an opaque one.
  expect(new URL(page.url()).origin).not.toBe(new URL(base).origin);
  await page.waitForFunction(() => document.body.dataset.result !== undefined, undefined, { timeout: 30_000 });
  const result = JSON.parse((await page.evaluate(() => document.body.dataset.result)) ?? "{}") as Record<
    string,
    string
  >;

  expect(result.origin).toBe("null");
  expect(result.cookie).not.toContain("tether_console");
  expect(result.read).toMatch(/^threw /);
  expect(result.storage).toMatch(/^threw /);
  // The post (no-cors, credentials) never succeeds: refused by the browser from an opaque origin, or by the console (Origin: null).
  expect(
    result.post === "opaque"
      ? answered.filter(([u]) => u.endsWith("/revoke")).every(([, s]) => s === 401 || s === 403)
      : result.post,
  ).toBeTruthy();
  expect(answered.filter(([u, status]) => u.endsWith("/revoke") && status < 400)).toEqual([]);
  expect(broker.registry.latestApproval("echo")).toEqual(before);
  expect(before?.revokedAt).toBeNull();
  // The framed console does not render inside the page.
  const frame = page.frames().find((f) => f !== page.mainFrame());
  const framed = frame === undefined ? "" : await frame.evaluate(() => document.body?.innerText ?? "").catch(() => "");
  expect(framed).not.toContain("Tether console");
}, 120_000);

test("the console's origin serves no extension page, and the pages' origin serves no console", async () => {
  const page = await browser.page();
  const onConsole = await page.request.get(`${base}/ext/notes/notes/page`, { maxRedirects: 0 });
  expect(onConsole.status()).toBe(404);
  const said = await onConsole.text();
  expect(said).toContain(`${pages}/ext/`);
  expect(said).not.toContain("Notes");
  const onPages = await page.request.get(`${pages}/console/`, { maxRedirects: 0 });
  expect(onPages.status()).toBe(404);
  expect(await onPages.text()).not.toContain("Tether console");
  // The page itself, where it belongs.
  expect(await (await page.request.get(`${pages}/ext/notes/notes/page`)).text()).toContain("<h1>Notes</h1>");
}, 60_000);
