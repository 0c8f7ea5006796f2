/**
 * A dry boot: the bundled artifact booted once, in the jail every boot uses,
 * from a throwaway folder, with no home, no store and no approval — to learn
 * what only a boot shows: that the module loads (no throw at top level), and
 * that what its hello serves is what the manifest declares. It holds no
 * invocation token, so any capability call it makes is refused; it is shut
 * down as soon as it has said hello.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TetherError } from "../base/errors.js";
import { createLogger } from "../base/log.js";
import { JAIL_ARTIFACT, resolveSandbox, type SandboxMode } from "../jail/sandbox.js";
import type { JailSetup } from "../jail/setup.js";
import { declaredOf } from "./declared.js";
import { ServedMismatch, type Served } from "../satellite/handshake.js";
import { SatelliteProcess } from "../satellite/process.js";
import { rewritePlaces } from "./artifact-lines.js";
import type { Artifact } from "./bundle-core.js";
import type { Manifest } from "./manifest.js";

export interface DryBootOptions {
  readonly jail: JailSetup;
  /** As the broker's: bwrap unless "none" (insecure) is asked for. */
  readonly sandbox?: SandboxMode;
  /** Default 10 s, as a real boot's. */
  readonly bootTimeoutMs?: number;
}

export type DryBoot =
  | { readonly ok: true; readonly served: Served; readonly ms: number }
  | { readonly ok: false; readonly problems: readonly string[]; readonly ms: number };

/** Boots `artifact` (bundled from `root` with `manifest`) once; what it serves, or what kept it from serving. */
export async function dryBoot(
  artifact: Artifact,
  manifest: Manifest,
  root: string,
  options: DryBootOptions,
): Promise<DryBoot> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  const dir = mkdtempSync(join(tmpdir(), "tether-dry-boot-"));
  const file = join(dir, `${manifest.name}.js`);
  const stderr: string[] = [];
  // The satellite's stderr reaches the log line by line: keep it, to say why a boot failed.
  const log = createLogger({
    level: "info",
    sink: (_level, msg, fields) => {
      if (msg === "satellite stderr") stderr.push(String(fields.line));
    },
  });
  try {
    writeFileSync(file, artifact.code, { mode: 0o600 });
    const sat = await SatelliteProcess.boot({
      name: manifest.name,
      artifact: file,
      declared: declaredOf(manifest),
      sandbox: resolveSandbox(options.sandbox),
      jail: options.jail,
      memoryMb: manifest.limits.memory_mb,
      bootTimeoutMs: options.bootTimeoutMs ?? 10_000,
      graceMs: 500,
      ladderStepMs: 2_000,
      log,
    });
    const served = sat.hello!;
    await sat.close();
    return { ok: true, served: { tools: served.tools, hooks: served.hooks, commands: served.commands }, ms: ms() };
  } catch (err) {
    if (err instanceof ServedMismatch)
      return { ok: false, problems: err.problems.length > 0 ? err.problems : [err.message], ms: ms() };
    const place = (text: string) => rewritePlaces(text, [JAIL_ARTIFACT, file], artifact.code, root);
    return { ok: false, problems: [whyNoHello(err as Error, stderr, place, manifest)], ms: ms() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What kept the module from saying hello, at its own file and line where Deno's stack says. */
function whyNoHello(
  err: Error,
  stderr: readonly string[],
  place: (text: string) => string,
  manifest: Manifest,
): string {
  const first = stderr.findIndex((l) => l.startsWith("error: "));
  if (first >= 0) {
    const what = stderr[first]!.replace(/^error: (Uncaught (\(in promise\) )?)?/, "");
    const frames = stderr.slice(first + 1).flatMap((l) => {
      const m = /^\s+at (.*)$/.exec(l);
      return m === null ? [] : [place(m[1]!)];
    });
    const where = frames.length > 0 ? ` at ${frames[0]}` : "";
    const rest = frames.length > 1 ? ` (called from ${frames.slice(1).join(", ")})` : "";
    return (
      `${manifest.entry} throws while loading, so nothing it exports is ` +
      `served: ${what}${where}${rest}. Fix the code that runs at top level`
    );
  }
  if (/did not say hello within/.test(err.message)) {
    return (
      `${manifest.entry} did not finish loading within the boot time: code at top level must not ` +
      `wait for long (a top-level await that never settles, a long loop). ${place(err.message)}`
    );
  }
  if (/ran out of memory/.test(err.message))
    return `${place(err.message)}: raise [limits] memory_mb in manifest.toml, or allocate less at top level`;
  const code = err instanceof TetherError ? ` (${err.code})` : "";
  return `cannot boot it${code}: ${place(err.message)}`;
}
