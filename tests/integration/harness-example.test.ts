/**
 * docs/harness.md walks through examples/harness.ts: run it for real, so the
 * documented example cannot rot.
 */
import { execa } from "execa";
import { join } from "node:path";
import { REPO } from "../support/satellites.js";

test("examples/harness.ts runs end to end and shows each step of the library API", async () => {
  const run = await execa("npx", ["tsx", join(REPO, "examples/harness.ts")], {
    cwd: REPO,
    reject: false,
    timeout: 60_000,
  });
  expect(run.stderr).toBe("");
  expect(run.exitCode).toBe(0);
  const lines = run.stdout.split("\n");
  expect(lines).toEqual(
    expect.arrayContaining([
      "guard: active",
      "echo: active",
      'tool echo (echo): {"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}',
      "  partial: counted 1 of 3",
      "  partial: counted 3 of 3",
      'count → Counted to 3 | {"n":3}',
      "  partial: counted 2 of 2",
      "sleep (cancelled after 300 ms) → error cancelled: Cancelled by the caller",
      "/flag example.com → flagged example.com: capability calls that reach it are refused",
    ]),
  );
  expect(run.stdout).toMatch(/^session_start → context \["briefing: you are working in /m);
  expect(run.stdout).toMatch(/^echo "rm -rf \/" → error blocked: Blocked by 'guard': .*\(blocked by guard\)$/m);
});
