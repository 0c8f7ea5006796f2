/**
 * Test support: bundle an extension folder into a temporary artifact and open
 * a satellite slot on it, inside the real jail.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleExtension } from "../../broker/install/bundle.js";
import { readManifest, type Manifest } from "../../broker/install/manifest.js";
import type { SandboxMode } from "../../broker/jail/sandbox.js";
import { silentLogger, type Logger } from "../../broker/base/log.js";
import type { SatelliteSpec } from "../../broker/satellite/spec.js";
import { SatelliteSlot, type SlotOptions } from "../../broker/satellite/slot.js";
import { envBundleCache, envJail, envSandbox } from "./env-options.js";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface Bundled {
  readonly manifest: Manifest;
  readonly artifact: string;
  readonly cleanup: () => void;
}

/** Bundles `dir` (absolute, or relative to the repo) into a temp file. */
export async function bundleToTemp(dir: string): Promise<Bundled> {
  const abs = resolve(REPO, dir);
  const manifest = readManifest(abs);
  const { code } = await bundleExtension(abs, manifest, envBundleCache());
  const tmp = mkdtempSync(join(tmpdir(), "tether-art-"));
  const artifact = join(tmp, `${manifest.name}.js`);
  writeFileSync(artifact, code);
  return { manifest, artifact, cleanup: () => rmSync(tmp, { recursive: true, force: true }) };
}

/** A satellite spec for a bundled extension, with test-friendly limits. */
export function specFor(bundled: Bundled, overrides: Partial<SatelliteSpec> = {}): SatelliteSpec {
  return {
    name: bundled.manifest.name,
    artifact: bundled.artifact,
    declared: { tools: bundled.manifest.tool.map((t) => t.name), hooks: bundled.manifest.hook.map((h) => h.event) },
    sandbox: envSandbox(),
    jail: envJail(),
    memoryMb: bundled.manifest.limits.memory_mb,
    bootTimeoutMs: 10_000,
    graceMs: 200,
    ladderStepMs: 1_000,
    log: silentLogger as Logger,
    ...overrides,
  };
}

/** A slot over a bundled extension. */
export function slotFor(
  bundled: Bundled,
  spec: Partial<SatelliteSpec> = {},
  options: Partial<Omit<SlotOptions, "spec">> = {},
): SatelliteSlot {
  return new SatelliteSlot({ idleMs: 0, ...options, spec: specFor(bundled, spec) });
}

/** The sandbox every test uses unless it says otherwise (the runner's environment's, see env-options.ts). */
export function defaultSandbox(): SandboxMode {
  return envSandbox();
}
