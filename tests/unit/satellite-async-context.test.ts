/**
 * The satellite runtime's invocation context (`jail-runtime/cap/intrinsics.ts`) carries each open
 * invocation's store across every way code moves to a later turn (`support/async-context-probes.ts`):
 * under Node (AsyncLocalStorage, as the unit tests run the runtime) and under the pinned Deno, bundled as
 * an artifact is — where it must come from Deno's core, not `node:async_hooks` (whose Node compatibility
 * layer costs a satellite's boot ~10 ms) — also after extension-style patches to the globals and to Deno's
 * async variable (the runtime keeps what it captured first).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { envJail } from "../support/env-options.js";
import { EXPECTED, asyncContextProbes, asyncContextSource } from "./support/async-context-probes.js";

const HERE = dirname(fileURLToPath(import.meta.url));

/** The probes as Deno runs them: the source of the context, and what each probe saw. */
async function probesInDeno(patched: boolean): Promise<{ source: string; seen: unknown }> {
  const dir = mkdtempSync(join(tmpdir(), "tether-async-context-"));
  try {
    const entry = `
import { asyncContextProbes, asyncContextSource } from "./support/async-context-probes.ts";
if (${patched}) {
  // What an extension could do after the runtime loaded: replace the timers, patch Deno's async variable.
  globalThis.setTimeout = () => { throw new Error("patched setTimeout"); };
  globalThis.clearTimeout = () => { throw new Error("patched clearTimeout"); };
  const Variable = Deno[Deno.internal].core.AsyncVariable;
  Variable.prototype.enter = () => { throw new Error("patched enter"); };
  Variable.prototype.get = () => ({ name: "patched get" });
}
console.log(JSON.stringify({ source: asyncContextSource, seen: await asyncContextProbes() }));
`;
    const out = join(dir, "probes.js");
    await esbuild.build({
      stdin: { contents: entry, resolveDir: HERE, loader: "ts" },
      bundle: true,
      format: "esm",
      platform: "neutral",
      outfile: out,
      logLevel: "silent",
    });
    const run = spawnSync(denoBinary(envJail().deno), ["run", "--no-config", "--no-prompt", out], {
      encoding: "utf8",
      timeout: 60_000,
    });
    if (run.status !== 0) throw new Error(`deno exited ${run.status}: ${run.stderr}`);
    return JSON.parse(run.stdout) as { source: string; seen: unknown };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("under Node: AsyncLocalStorage, and every probe sees its own run's store", async () => {
  expect(asyncContextSource).toBe("node:async_hooks");
  expect(await asyncContextProbes()).toEqual(EXPECTED);
});

test("under the pinned Deno: Deno's core variable, and every probe sees its own run's store", async () => {
  expect(await probesInDeno(false)).toEqual({ source: "deno core", seen: EXPECTED });
});

test("under the pinned Deno, after an extension patched the timers and Deno's async variable: the same", async () => {
  expect(await probesInDeno(true)).toEqual({ source: "deno core", seen: EXPECTED });
});
