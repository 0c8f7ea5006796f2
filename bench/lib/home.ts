/**
 * A Tether home for a bench: extensions installed and approved through the
 * library, which of them each session wants, and copies of extension folders
 * with their manifest edited (a new name, a limit, a hook matcher).
 */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { parseManifest } from "../../broker/install/manifest.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { Session } from "../../broker/sessions/session.js";
import type { ToolCallReport } from "../../broker/sessions/session.js";

/** The checkout: two folders up from bench/lib, three from dist/bench/lib (compiled by `make build`). */
export const REPO = [
  resolve(dirname(fileURLToPath(import.meta.url)), "../.."),
  resolve(dirname(fileURLToPath(import.meta.url)), "../../.."),
].find((dir) => existsSync(join(dir, "manifests/echo/manifest.toml")))!;
export const ECHO_DIR = join(REPO, "manifests/echo");
export const NOP_GUARD_DIR = join(REPO, "bench/fixtures/nop-guard");

/** Whether this checkout's manifest parser accepts `text` (a probe for features that may not be merged yet). */
function parses(text: string): boolean {
  try {
    parseManifest(text, "(probe)");
    return true;
  } catch {
    return false;
  }
}

const PROBE = 'name = "probe"\nversion = "1.0.0"\ndescription = "probe"\nentry = "index.ts"\n';

/** Whether this checkout's manifest takes `[limits] concurrency` (a satellite pool per extension). */
export const HAS_CONCURRENCY = parses(`${PROBE}[limits]\nconcurrency = 4\n`);

/** The ways a `[[hook]]` matcher may be spelled that the bench tries, the spelling in docs/hooks.md first. */
export const MATCH_SPELLINGS = ['match = ["no-such-tool"]', 'match = "no-such-tool"'] as const;
/** How this checkout's manifest spells a `tool_call` matcher that matches no tool of the bench, or null (no matchers). */
export const HOOK_MATCH = MATCH_SPELLINGS.find((m) => parses(`${PROBE}[[hook]]\nevent = "tool_call"\n${m}\n`)) ?? null;

export function openBroker(home: string): Broker {
  return Broker.open({ home, log: createLogger({ level: "error" }) });
}

/** Installs and approves the extension in `dir`; `byDefault` false makes sessions leave it off unless they ask for it. */
export async function installApproved(broker: Broker, dir: string, byDefault = true): Promise<string> {
  const { installed } = await broker.registry.install(dir);
  const name = installed.manifest.name;
  broker.registry.approve(name);
  new Preferences(broker.store).setGlobal(name, byDefault);
  return name;
}

/** Saves, before the session opens, which extensions it wants (or, `enabled` false, does not), so it boots just those. */
export function want(broker: Broker, session: string, extensions: readonly string[], enabled = true): void {
  const prefs = new Preferences(broker.store);
  for (const name of extensions) prefs.setSession(session, name, enabled);
}

/** Opens a session and checks it runs exactly `active` (registry order aside). */
export async function openSession(
  broker: Broker,
  id: string,
  workspace: string,
  active: readonly string[],
): Promise<Session> {
  const session = await Session.open(broker, { id, workspace });
  const running = session
    .status()
    .filter((s) => s.state === "active")
    .map((s) => s.name)
    .sort();
  if (running.join() !== [...active].sort().join()) {
    // Read before the close: a closed session has no status.
    const why = JSON.stringify(session.status().filter((s) => s.reason !== null));
    await session.close();
    throw new Error(`session '${id}' runs [${running.join(", ")}], not [${[...active].sort().join(", ")}]: ${why}`);
  }
  return session;
}

/** Rejects unless a session's echo call answered `textBytes` characters of text. */
export function checkReport(report: ToolCallReport, textBytes: number): void {
  if (!report.outcome.ok) throw new Error(`echo failed: ${report.outcome.error.code}: ${report.outcome.error.msg}`);
  const block = report.outcome.value.content[0];
  if (block?.type !== "text" || block.text.length !== textBytes) throw new Error("echo answered something else");
}

/**
 * Copies the extension folder `from` to `to`, its manifest edited by `edit`; the copy's manifest
 * must still parse (else the error says what this checkout's manifest refuses).
 */
export function copyExtension(from: string, to: string, edit: (manifest: string) => string): void {
  mkdirSync(dirname(to), { recursive: true });
  cpSync(from, to, { recursive: true });
  const file = join(to, "manifest.toml");
  const text = edit(readFileSync(file, "utf8"));
  parseManifest(text, file);
  writeFileSync(file, text);
}

/** The manifest with another `name`. */
export function renamed(manifest: string, name: string): string {
  return manifest.replace(/^name = ".*"$/m, `name = "${name}"`);
}

/** Adds `line` to the manifest's `[limits]` table. */
export function withLimit(manifest: string, line: string): string {
  return manifest.replace(/^\[limits\]$/m, `[limits]\n${line}`);
}
