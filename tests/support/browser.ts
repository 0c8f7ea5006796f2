/**
 * Test support: a real browser for the browser tests (tests/browser/,
 * docs/browser-tests.md) — Debian's Chromium, driven by playwright-core.
 *
 * - **Which Chromium**: `TETHER_CHROMIUM` when set, else `/usr/bin/chromium`
 *   (Debian's `chromium` package, which `make browser` installs when missing
 *   and root). playwright-core downloads no browser, and `playwright install`
 *   is never run: the browser is the distribution's, updated with the machine.
 * - **One browser per test file, a fresh context per test**: `useBrowser()`
 *   registers the jest hooks — launch in `beforeAll`, a new context (no
 *   cookies, storage or cache from another test) before each test, closed
 *   after it, the browser closed in `afterAll` — so a failing test leaves
 *   nothing running. Should the worker itself die, Chromium goes with it: it is
 *   driven over a pipe it exits on when the pipe closes, and playwright kills
 *   the browsers it launched when the process exits.
 * - **Screenshots**: `screenshot(page, name)` saves `<name>.png` (the whole
 *   page) into the run's folder: `TETHER_SCREENSHOTS` when set, else
 *   `test-output/screenshots/` in the repository (gitignored), which each run
 *   of the browser project starts empty (tests/support/browser-global-setup.mjs).
 */
import { afterAll, afterEach, beforeAll, beforeEach } from "@jest/globals";
import { accessSync, constants, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from "playwright-core";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DEBIAN_CHROMIUM = "/usr/bin/chromium";
const INSTALL =
  "run `make browser` (it installs Debian's chromium when root) or `sudo apt-get install -y chromium`, or set TETHER_CHROMIUM to a Chromium binary";

/** The Chromium binary to drive: TETHER_CHROMIUM, else Debian's /usr/bin/chromium; throws saying how to install it. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  const named = env.TETHER_CHROMIUM;
  const path = named !== undefined && named !== "" ? resolve(named) : DEBIAN_CHROMIUM;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(
      named !== undefined && named !== ""
        ? `TETHER_CHROMIUM=${named}: no executable file there (unset it to use Debian's ${DEBIAN_CHROMIUM}, or ${INSTALL})`
        : `no Chromium at ${DEBIAN_CHROMIUM}: ${INSTALL}`,
    );
  }
  return path;
}

/** The folder this run's screenshots go to (created): TETHER_SCREENSHOTS, else test-output/screenshots/ in the repository. */
export function screenshotDir(env: NodeJS.ProcessEnv = process.env): string {
  const named = env.TETHER_SCREENSHOTS;
  const dir = named !== undefined && named !== "" ? resolve(named) : join(REPO, "test-output", "screenshots");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Chromium's command-line switches for the tests. */
export function chromiumArgs(asRoot = process.getuid?.() === 0): string[] {
  return [
    // Chromium's own sandbox (namespaces, seccomp) refuses to start as root: there it
    // runs without it. The tests only ever load pages they serve themselves on
    // loopback — never content from elsewhere — and the proxy below makes anything
    // else unreachable, so that exposes nothing. As any other user the sandbox stays
    // on (see `launchChromium`).
    ...(asRoot ? ["--no-sandbox"] : []),
    // Loopback only: every request that is not to loopback goes to a proxy at
    // 127.0.0.1:9, where nothing listens, and fails (ERR_PROXY_CONNECTION_FAILED);
    // loopback addresses bypass a proxy by default.
    "--proxy-server=http://127.0.0.1:9",
    // A container's /dev/shm may be tiny; Chromium then writes its shared memory to /tmp.
    "--disable-dev-shm-usage",
  ];
}

/** Launches Chromium headless (see `findChromium`, `chromiumArgs`). The caller closes it. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = findChromium();
  try {
    // chromiumSandbox: true, or playwright itself adds --no-sandbox for every user;
    // chromiumArgs() turns it off as root only.
    return await chromium.launch({ executablePath, headless: true, chromiumSandbox: true, args: chromiumArgs() });
  } catch (err) {
    throw new Error(`cannot launch ${executablePath} headless: ${(err as Error).message}`);
  }
}

/** Keeps `name` to a plain file name: letters, digits, `-`, `_`, `.`. */
function fileName(name: string): string {
  const clean = name
    .replace(/\.png$/i, "")
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[-.]+|-+$/g, "");
  if (clean === "") throw new Error(`screenshot name '${name}' has nothing usable as a file name`);
  return `${clean}.png`;
}

/** Saves a screenshot of the whole page as `<name>.png` in the run's folder; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const path = join(screenshotDir(), fileName(name));
  await page.screenshot({ path, fullPage: true });
  return path;
}

export interface BrowserFixture {
  /** The file's browser (launched in beforeAll). */
  browser(): Browser;
  /** The current test's context: fresh for each test, closed after it. */
  context(): BrowserContext;
  /** A new page in the current test's context. */
  page(): Promise<Page>;
}

/**
 * Registers the hooks that give a test file one headless Chromium and each of
 * its tests a fresh context (`options` for every context: viewport, locale…).
 * Call it at the top level of the test file (or of a describe block).
 */
export function useBrowser(options: BrowserContextOptions = {}): BrowserFixture {
  let browser: Browser | null = null;
  let context: BrowserContext | null = null;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  beforeEach(async () => {
    if (browser === null) throw new Error("Chromium did not launch (see the beforeAll error)");
    context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  });
  afterEach(async () => {
    const closing = context;
    context = null;
    await closing?.close();
  });
  afterAll(async () => {
    const closing = browser;
    browser = null;
    await closing?.close();
  });
  return {
    browser() {
      if (browser === null) throw new Error("no browser: useBrowser() hooks run around the tests only");
      return browser;
    },
    context() {
      if (context === null) throw new Error("no context: one exists only while a test runs");
      return context;
    },
    page() {
      if (context === null) throw new Error("no context: one exists only while a test runs");
      return context.newPage();
    },
  };
}
