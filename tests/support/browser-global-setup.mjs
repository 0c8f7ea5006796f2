/**
 * Jest globalSetup of the `browser` project (jest.config.js): each run's
 * screenshots in a folder of their own. The default folder,
 * test-output/screenshots/ in the repository (gitignored), is emptied, so what
 * it holds after a run is that run's screenshots; a folder named by
 * TETHER_SCREENSHOTS is the caller's (one per run, say, in CI) and is only
 * created, never emptied. Jest runs it in its parent process, before any worker,
 * and only when the project has tests to run. Keep the default path in step
 * with `screenshotDir()` in tests/support/browser.ts.
 */
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export default async function globalSetup() {
  const named = process.env.TETHER_SCREENSHOTS;
  if (named !== undefined && named !== "") {
    mkdirSync(resolve(named), { recursive: true });
    return;
  }
  const dir = join(resolve(dirname(fileURLToPath(import.meta.url)), "../.."), "test-output", "screenshots");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}
