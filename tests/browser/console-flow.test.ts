/**
 * The operator console in a real Chromium (docs/console.md): two examples
 * installed in a home, a `tether serve` server over it on loopback, and an
 * operator who signs in, reads the review with its rules decoded, narrows
 * and approves one, sees a call succeed through the library — and the rule it
 * left out refused — revokes it from the page and sees the next call refused.
 * A form posted from another site (no cookie: 401) or from another port of
 * the same site (the Strict cookie sent: 403 by the origin check), and
 * requests without the cookie, change
 * nothing. Screenshots of the main pages are saved by the run
 * (tests/support/browser.ts) and are the ones docs/operators.md shows.
 */
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { WebSocket } from "ws";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { screenshot, useBrowser } from "../support/browser.js";

const TOKEN = "console-flow-token-0123456789abcdef";
const browser = useBrowser();
let tmp: string;
let broker: Broker;
let server: ServeServer;
let consoleUrl: string;
let wsUrl: string;
let api: Server;
let apiPort: number;
let evil: Server;
/** Another site (127.0.0.2), and the same site on another port (127.0.0.1), each with a page whose form posts to the console. */
let evilOrigins: string[];

const closers: Array<() => Promise<unknown>> = [];
const listen = (s: Server, host: string): Promise<number> =>
  new Promise((resolve) => s.listen(0, host, () => resolve((s.address() as AddressInfo).port)));

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-console-flow-"));
  const home = join(tmp, "home");
  // The weather service the extension reaches: a loopback server, reachable through a rule naming it.
  api = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ path: req.url, sky: "clear" }));
  });
  apiPort = await listen(api, "127.0.0.1");
  broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }), extensionLogs: false });
  writeFileSync(join(home, "policy.toml"), "[net]\nallow_private = true\n");
  // weather, asking for two rules: the forecast path, and an admin path the operator will leave out.
  const weather = join(tmp, "src", "weather");
  cpSync(join(REPO, "manifests/weather"), weather, { recursive: true });
  const manifest = readFileSync(join(weather, "manifest.toml"), "utf8").replace(
    /^allow = .*$/m,
    `allow = ["GET http://127.0.0.1:${apiPort}/v1", "GET http://127.0.0.1:${apiPort}/admin"]`,
  );
  writeFileSync(join(weather, "manifest.toml"), manifest);
  await broker.registry.install(weather);
  await broker.registry.install(join(REPO, "manifests/echo"));

  server = new ServeServer({ broker, token: TOKEN, log: createLogger({ level: "error" }), say: () => {} });
  const { url } = await server.listen({ port: 0 });
  consoleUrl = `http://127.0.0.1:${new URL(url).port}/console`;
  wsUrl = url;

  // Another site (127.0.0.2 is another site to the browser) whose page posts a form to the console.
  evil = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(
      `<!doctype html><form id="f" method="POST" action="${consoleUrl}/ext/echo/revoke">` +
        `<input name="confirm" value="yes"><input name="csrf" value="guessed"><button id="go">go</button></form>`,
    );
  });
  // Ports are not part of a site: a page on another port of 127.0.0.1 sends the Strict cookie along; the origin check and the CSRF token stop it.
  const neighbour = createServer((req, res) => evil.emit("request", req, res));
  evilOrigins = [
    `http://127.0.0.2:${await listen(evil, "127.0.0.2")}`,
    `http://127.0.0.1:${await listen(neighbour, "127.0.0.1")}`,
  ];
  closers.push(() => new Promise((r) => neighbour.close(() => r(undefined))));
});

afterAll(async () => {
  await server?.shutdown(Promise.resolve());
  await broker?.destroy().catch(() => {});
  await new Promise((r) => api?.close(r));
  await new Promise((r) => evil?.close(r));
  for (const close of closers) await close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Opens a session over the server's WebSocket API, as a harness does; resolves with the answer. */
async function openServedSession(id: string): Promise<unknown> {
  const ws = new WebSocket(wsUrl, { headers: { Authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  try {
    const answer = new Promise<unknown>((resolve) =>
      ws.once("message", (data: Buffer) => resolve(JSON.parse(data.toString("utf8")))),
    );
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session.open", params: { id, workspace: tmp } }));
    return await answer;
  } finally {
    ws.close();
  }
}

const fetchTool = (url: string) =>
  broker.callTool("weather", "fetch_url", JSON.stringify({ url }), { session: "console-flow" });

test("sign in, review the decoded rules, narrow and approve, call through the library, revoke from the page, the next call refused", async () => {
  const page = await browser.page();
  await page.goto(`${consoleUrl}/`);
  // Not signed in: sent to the sign-in page.
  expect(new URL(page.url()).pathname).toBe("/console/login");
  await screenshot(page, "console-login");
  await page.fill("input[name=token]", TOKEN);
  await page.fill("input[name=operator]", "alice");
  await Promise.all([page.waitForURL(`${consoleUrl}/`), page.click("form#login button[type=submit]")]);
  const cookie = (await browser.context().cookies()).find((c) => c.name === "tether_console");
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console" });

  // The list: both pending, with what each can reach.
  await expect(page.locator("tr[data-extension=weather]").getAttribute("data-status")).resolves.toBe("pending");
  await expect(page.locator("tr[data-extension=echo]").getAttribute("data-status")).resolves.toBe("pending");
  expect(await page.locator("tr[data-extension=weather] td.reach").innerText()).toContain("127.0.0.1");
  await screenshot(page, "console-extensions");

  // The review: every rule decoded.
  await Promise.all([page.waitForURL(`${consoleUrl}/ext/weather`), page.click("tr[data-extension=weather] a.review")]);
  const forecastRule = `GET http://127.0.0.1:${apiPort}/v1`;
  const adminRule = `GET http://127.0.0.1:${apiPort}/admin`;
  for (const rule of [forecastRule, adminRule]) {
    const item = page.locator(`section#rules li[data-rule="${rule}"]`);
    await expect(item.isVisible()).resolves.toBe(true);
    expect(await item.innerText()).toMatch(/127\.0\.0\.1/);
  }
  expect(await page.locator("section#tools").innerText()).toContain("forecast");
  await screenshot(page, "console-review");

  // Narrow: leave the admin rule out, then confirm.
  await page.uncheck(`form#approve input[name=rule][value="${adminRule}"]`);
  await page.click("form#approve button#approve");
  const confirm = await page.locator("section#confirm").innerText();
  expect(confirm).toContain(forecastRule);
  await screenshot(page, "console-confirm-approve");
  expect(broker.registry.latestApproval("weather")).toBeNull(); // nothing changed before the confirmation
  await Promise.all([page.waitForURL(`${consoleUrl}/ext/weather`), page.click("form#confirm-form button#confirm")]);
  expect(await page.locator("#flash").innerText()).toMatch(/approved/i);

  // The store holds what `tether approve weather --only <rule>` would have recorded, by the signed-in operator.
  const approval = broker.registry.latestApproval("weather")!;
  expect(approval.grants.net).toEqual([forecastRule]);
  expect(approval.approvedBy).toBe("alice");

  // A call through the library: the granted rule reaches the service, the one left out is refused.
  const ok = await fetchTool(`http://127.0.0.1:${apiPort}/v1/today`);
  expect(ok.ok).toBe(true);
  expect(JSON.stringify(ok.ok && ok.value.content)).toContain(`200 from http://127.0.0.1:${apiPort}/v1/today`);
  const left = await fetchTool(`http://127.0.0.1:${apiPort}/admin/users`);
  expect(JSON.stringify(left)).toMatch(/denied/);

  // Revoke from the page.
  await page.click("form#revoke button#revoke");
  expect(await page.locator("section#confirm").innerText()).toMatch(/weather/);
  await Promise.all([page.waitForURL(`${consoleUrl}/ext/weather`), page.click("form#confirm-form button#confirm")]);
  expect(await page.locator("#flash").innerText()).toMatch(/revoked/i);
  const refused = await fetchTool(`http://127.0.0.1:${apiPort}/v1/today`).catch((err: Error & { code?: string }) => ({
    ok: false as const,
    error: { code: err.code },
  }));
  expect(refused.ok).toBe(false);
  expect(!refused.ok && refused.error.code).toBe("not_approved");

  // The audit shows the calls; the sessions page lists the library's session.
  await page.goto(`${consoleUrl}/audit?extension=weather`);
  expect(await page.locator("table#ledger tr[data-invocation]").count()).toBeGreaterThanOrEqual(2);
  await expect(page.locator("svg#activity").isVisible()).resolves.toBe(true);
  await screenshot(page, "console-audit");
  // A harness's session on this server: listed with what is active in it and why the rest is not; reloaded, then closed, from the page.
  // (Approve echo again through the page first, so the session has one active extension and one inactive.)
  await page.goto(`${consoleUrl}/ext/echo`);
  await page.click("form#approve button#approve");
  await Promise.all([page.waitForURL(`${consoleUrl}/ext/echo`), page.click("form#confirm-form button#confirm")]);
  expect(await openServedSession("harness-1")).toMatchObject({ result: expect.anything() });
  await page.goto(`${consoleUrl}/sessions`);
  const row = page.locator("tr[data-session=harness-1]");
  await expect(row.locator("td.active div[data-active=echo]").count()).resolves.toBe(1);
  expect(await row.locator("td.inactive div[data-inactive=weather] span.reason").innerText()).toMatch(/revoked/i);
  await screenshot(page, "console-sessions");
  await row.locator("form.reload button").click();
  await expect(page.locator("section#confirm").isVisible()).resolves.toBe(true);
  await Promise.all([page.waitForURL(`${consoleUrl}/sessions`), page.click("form#confirm-form button#confirm")]);
  expect(await page.locator("#flash").innerText()).toMatch(/reload/i);
  await page.locator("tr[data-session=harness-1] form.close button").click();
  await Promise.all([page.waitForURL(`${consoleUrl}/sessions`), page.click("form#confirm-form button#confirm")]);
  expect(await page.locator("#flash").innerText()).toMatch(/clos/i);
  await expect(page.locator("tr[data-session=harness-1]").count()).resolves.toBe(0);
});

test("a form posted from another site, and requests without the cookie, change nothing", async () => {
  const page = await browser.page();
  await page.goto(`${consoleUrl}/login`);
  await page.fill("input[name=token]", TOKEN);
  await Promise.all([page.waitForURL(`${consoleUrl}/`), page.click("form#login button[type=submit]")]);

  // Signed in, the operator visits another site (and the same site on another port) whose form posts a revocation of echo to the console.
  const before = broker.registry.latestApproval("echo");
  for (const origin of evilOrigins) {
    await page.goto(`${origin}/`);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${consoleUrl}/ext/echo/revoke`),
      page.click("#go"),
    ]);
    expect([origin, answer.status()]).toEqual([origin, origin.startsWith("http://127.0.0.2") ? 401 : 403]);
    expect(broker.registry.latestApproval("echo")).toEqual(before);
  }

  // No cookie at all (a fresh context): a page sends to the sign-in, a state change is 401.
  const bare = await browser.browser().newContext();
  try {
    const response = await bare.request.post(`${consoleUrl}/ext/echo/revoke`, {
      form: { confirm: "yes" },
      maxRedirects: 0,
    });
    expect(response.status()).toBe(401);
    const gotPage = await bare.request.get(`${consoleUrl}/ext/echo`, { maxRedirects: 0 });
    expect(gotPage.status()).toBe(303);
    expect(gotPage.headers()["location"]).toMatch(/\/console\/login$/);
  } finally {
    await bare.close();
  }
  expect(broker.registry.latestApproval("echo")).toEqual(before);
});
