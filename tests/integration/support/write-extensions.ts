/**
 * Test support: small extensions written into a temporary folder (one folder
 * each: manifest.toml and index.ts), for suites whose fixtures are a few lines.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type HookSession, openHookSession } from "../../support/hook-session.js";

export interface ExtensionFiles {
  /** The manifest's rows after name, version, description and entry. */
  readonly manifest: string;
  /** The module (index.ts). */
  readonly code: string;
}

/**
 * Writes each extension under a fresh temporary folder; returns that folder. `deadlineMs` sets every
 * extension's `[limits] deadline_ms` (suites whose probes would hang until a deadline when they fail).
 */
export function writeExtensions(
  prefix: string,
  extensions: Readonly<Record<string, ExtensionFiles>>,
  options: { readonly deadlineMs?: number } = {},
): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const deadline = options.deadlineMs !== undefined ? `deadline_ms = ${options.deadlineMs}\n` : "";
  for (const [name, files] of Object.entries(extensions)) {
    const dir = join(root, name);
    mkdirSync(dir);
    writeFileSync(
      join(dir, "manifest.toml"),
      `name = "${name}"\nversion = "1.0.0"\ndescription = "Test extension ${name}."\nentry = "index.ts"\n${files.manifest}\n[limits]\nmemory_mb = 64\nidle_s = 0\n${deadline}`,
    );
    writeFileSync(join(dir, "index.ts"), files.code);
  }
  return root;
}

/**
 * The extensions written (as `writeExtensions`) and one session opened over all of them on a fresh broker
 * (`openHookSession`); `close()` also removes the written folder.
 */
export async function openWrittenSession(
  prefix: string,
  extensions: Readonly<Record<string, ExtensionFiles>>,
  sessionId: string,
  options: { readonly deadlineMs?: number } = {},
): Promise<HookSession> {
  const fixtures = writeExtensions(`${prefix}ext-`, extensions, options);
  const opened = await openHookSession(prefix, fixtures, Object.keys(extensions), sessionId);
  return {
    ...opened,
    close: async () => {
      await opened.close();
      rmSync(fixtures, { recursive: true, force: true });
    },
  };
}
