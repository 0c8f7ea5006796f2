/**
 * `make demo CONSOLE=1` (broker/demo/run.ts --console, broker/demo/console.ts):
 * the whole demo, then the operator console over its home, printed as
 * `console: http://127.0.0.1:PORT/console/  token: …`, answering on that URL
 * for as long as TETHER_DEMO_CONSOLE_MS says, then closed, the home removed,
 * exit 0. And Ctrl-C (SIGINT) closes the console before its time.
 *
 * Until the console itself is served, the URL answers 426 (serve's pointer to
 * its WebSocket protocol): any HTTP answer counts here. The demo's example
 * services listen on the fixed ports its manifests name (17311–17320): a
 * `make demo` running meanwhile on this machine makes the spawned one fail.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { consoleDemo } from "../../broker/demo/console.js";
import { envOptions } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";
import { until } from "../support/wait.js";

/** The whole demo: real satellites booting, a timeout, a heap bomb, several spawns — on a machine that may be loaded. */
const DEMO_MS = 240_000;
const CONSOLE_LINE = /^console: (http:\/\/127\.0\.0\.1:(\d+)\/console\/) {2}token: ([0-9a-f]{64})$/;

/** Any HTTP answer from `url` (redirects not followed): its status. */
async function answer(url: string): Promise<number> {
  const res = await fetch(url, { redirect: "manual" });
  await res.arrayBuffer();
  return res.status;
}

test(
  "the demo, then the console on its printed URL for TETHER_DEMO_CONSOLE_MS, then exit 0",
  async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "broker/demo/run.ts"), "--console"], {
      cwd: REPO,
      env: { ...process.env, TETHER_DEMO_CONSOLE_MS: "5000" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const lines: string[] = [];
    const asked: { status?: Promise<number> } = {};
    // Asked as soon as the line is printed: the console is up from then until TETHER_DEMO_CONSOLE_MS pass.
    createInterface({ input: child.stdout }).on("line", (line) => {
      lines.push(line);
      const printed = CONSOLE_LINE.exec(line);
      if (printed !== null && asked.status === undefined) asked.status = answer(printed[1]!);
    });
    try {
      const code = await exited;
      // Its stderr shown should it fail (toMatchObject would leave a matching key's value out of the diff).
      expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
      const printed = lines.find((l) => CONSOLE_LINE.test(l));
      expect(printed).toBeDefined();
      expect(asked.status).toBeDefined();
      const got = await asked.status!;
      expect(got).toBeGreaterThanOrEqual(200);
      expect(got).toBeLessThan(600);
      // The story ran first; the console came after the satellites stopped, and closed cleanly.
      const at = (text: string) => lines.findIndex((l) => l.includes(text));
      expect(at("== The audit trail (tether audit)")).toBeGreaterThan(-1);
      expect(at("all satellites stopped")).toBeLessThan(at("console: http://127.0.0.1:"));
      expect(lines).toContain("  reachable for 5 s (TETHER_DEMO_CONSOLE_MS sets how long); Ctrl-C closes it sooner");
      expect(lines).toContain("  tether serve: stopped");
      expect(lines.at(-1)).toBe("  console closed; temporary home removed");
      const home = /^home: (.+)$/.exec(lines.find((l) => l.startsWith("home: ")) ?? "")?.[1];
      expect(home).toBeDefined();
      expect(existsSync(home!)).toBe(false);
      // Nothing listens there any more.
      await expect(answer(CONSOLE_LINE.exec(printed!)![1]!)).rejects.toThrow();
    } finally {
      child.kill("SIGKILL");
    }
  },
  DEMO_MS,
);

test("Ctrl-C closes the console before its time", async () => {
  const home = mkdtempSync(join(tmpdir(), "tether-demo-console-"));
  const said: string[] = [];
  const listeners = process.listenerCount("SIGINT");
  try {
    const running = consoleDemo({
      broker: { ...envOptions(), home },
      holdMs: 600_000,
      step: (title) => said.push(`== ${title}`),
      say: (line) => said.push(line),
    });
    await until("the console's line", () => said.some((l) => CONSOLE_LINE.test(l)));
    const url = CONSOLE_LINE.exec(said.find((l) => CONSOLE_LINE.test(l))!)![1]!;
    expect(await answer(url)).toBeLessThan(600);
    // What the terminal's Ctrl-C delivers: the handler it installed answers (no real signal reaches jest's worker).
    process.emit("SIGINT", "SIGINT");
    await running;
    expect(said).toContain("\n  SIGINT: closing the console");
    expect(said).toContain("  tether serve: stopped");
    expect(process.listenerCount("SIGINT")).toBe(listeners);
    await expect(answer(url)).rejects.toThrow();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
