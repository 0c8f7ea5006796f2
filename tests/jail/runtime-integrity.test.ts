/**
 * Runtime integrity, in real jails (bubblewrap + Deno flags): the satellite
 * boots — boot token, connect, socket grants revoked and checked gone — before
 * any extension code runs, so an extension's top-level code cannot keep a
 * grant by patching `Deno.permissions.revokeSync` (the finding this closes),
 * and patching the globals the runtime uses breaks neither the protocol nor
 * the revocation. The fixture is tests/jail/fixtures/hostile-runtime; each
 * probe bundles a copy of it that applies one patch (or all of them).
 *
 * On Deno's words: a revoked grant reads "prompt" (Deno has no "denied" state
 * for it), which --no-prompt refuses, and asking for it again answers
 * "denied". Under the old order the top-level query read "granted".
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import { ARTIFACT_BUILD_OPTIONS } from "../../broker/install/bundle.js";
import { readManifest } from "../../broker/install/manifest.js";
import { createLogger } from "../../broker/base/log.js";
import type { InvocationOutcome } from "../../broker/base/outcome.js";
import type { SatelliteSlot } from "../../broker/satellite/slot.js";
import { REPO, bundleToTemp, slotFor, type Bundled } from "../support/satellites.js";
import { PATCH_NAMES } from "./fixtures/hostile-runtime/patches.js";

const FIXTURE = join(REPO, "tests/jail/fixtures/hostile-runtime");
const SOCK = "/run/tether/s.sock";
const MARKER = "hostile-runtime: top-level code starts here";

const slots: SatelliteSlot[] = [];
const cleanups: Array<() => void> = [];

afterEach(async () => {
  await Promise.all(slots.splice(0).map((s) => s.destroy("test over")));
});

afterAll(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A copy of the fixture whose chosen.ts names `chosen`, bundled the way `tether install` does. */
async function variant(chosen: string): Promise<Bundled> {
  const dir = mkdtempSync(join(tmpdir(), "tether-hostile-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(FIXTURE, dir, { recursive: true });
  writeFileSync(join(dir, "chosen.ts"), `export const CHOSEN: string = ${JSON.stringify(chosen)};\n`);
  const bundled = await bundleToTemp(dir);
  cleanups.push(bundled.cleanup);
  return bundled;
}

function open(bundled: Bundled, spec: Parameters<typeof slotFor>[1] = {}): SatelliteSlot {
  const slot = slotFor(bundled, { sandbox: "bwrap", ...spec });
  slots.push(slot);
  return slot;
}

function call(name: string, args: unknown = {}) {
  return { kind: "tool" as const, name, args: JSON.stringify(args), strand: "integrity", deadlineMs: 5_000 };
}

function textReply(text: string): InvocationOutcome {
  return { ok: true, value: { content: [{ type: "text", text }], terminate: false } };
}

interface Report {
  chosen: string;
  patched: boolean;
  topLevel: { socket: string; query: Record<string, string>; request: Record<string, string> };
  now: { query: Record<string, string>; request: Record<string, string> };
  attempts: Record<string, { outcome: string; name?: string; message?: string; detail?: string }>;
}

async function report(slot: SatelliteSlot): Promise<Report> {
  const outcome = await slot.invoke(call("grants"));
  if (!outcome.ok) throw new Error(`grants answered ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content[0];
  expect(block?.type).toBe("json");
  return (block as { json: unknown }).json as Report;
}

const NOT_HELD = { net: "prompt", read: "prompt", write: "prompt" };
const DENIED = { net: "denied", read: "denied", write: "denied" };

/** The grants were gone before the module's first statement, and every use of them is refused. */
function expectNoGrant(r: Report, chosen: string): void {
  expect(r.chosen).toBe(chosen);
  expect(r.patched).toBe(true);
  expect(r.topLevel.socket).toBe(SOCK);
  expect(r.topLevel.query).toEqual(NOT_HELD);
  expect(r.topLevel.request).toEqual(DENIED);
  expect(r.now.query).toEqual(NOT_HELD);
  expect(r.now.request).toEqual(DENIED);
  expect(Object.keys(r.attempts).sort()).toEqual(["chmod", "connect", "listen", "remove"]);
  for (const [what, seen] of Object.entries(r.attempts)) {
    expect({ what, ...seen }).toEqual({
      what,
      outcome: "refused",
      name: "NotCapable",
      message: expect.stringMatching(/^Requires (net|read|write) access to "(unix:)?\/run\/tether\/s\.sock"/),
    });
  }
}

/** Plain calls are answered exactly: short and long text (past the codec's first buffer), non-ASCII included. */
async function expectServes(slot: SatelliteSlot, label: string): Promise<void> {
  for (const text of [
    `plain call under ${label}`,
    `ünïcødé ✓ under ${label}: ${"x".repeat(300)}`,
    `${label} `.repeat(2_000),
  ]) {
    expect(await slot.invoke(call("echo", { text }))).toEqual(textReply(text));
  }
}

test("the artifact boots before the extension: the prelude's top-level await, then the SDK, then the module", async () => {
  const bundled = await variant("all");
  const code = readFileSync(bundled.artifact, "utf8");
  const at = (re: RegExp) => {
    const m = re.exec(code);
    if (m === null) throw new Error(`${re} is not in the artifact`);
    return m.index;
  };
  const prelude = at(/^\/\/ \S*jail-runtime\/cap\/prelude\.ts$/m);
  const revoke = at(/revokeSync\(\{ name \}\)/);
  const handOver = at(/^handOver\(\{/m);
  const sdk = at(/^\/\/ \S*jail-runtime\/ext\/runtime\.ts$/m);
  const module = code.indexOf(MARKER);
  expect(module).toBeGreaterThan(0);
  // The boot's awaits sit at the artifact's top level, between the prelude's start and its hand-over.
  const awaits = [...code.matchAll(/^(?:var|let|const) \w+ = await /gm)].map((m) => m.index);
  expect(awaits.filter((i) => i > prelude && i < handOver).length).toBeGreaterThanOrEqual(2);
  expect(prelude).toBeLessThan(revoke);
  expect(revoke).toBeLessThan(handOver);
  expect(handOver).toBeLessThan(sdk);
  expect(sdk).toBeLessThan(module);
});

test("everything patched at top level: no grant was ever visible to the module, none can be used, and calls are answered", async () => {
  const slot = open(await variant("all"));
  await expectServes(slot, "all patches");
  expectNoGrant(await report(slot), "all");
  await expectServes(slot, "all patches, again");
  expect(slot.boots).toBe(1);
});

describe("one patch at a time: the satellite answers a plain call exactly and holds no grant", () => {
  test("every patch is probed", () => {
    expect(PATCH_NAMES).toEqual(
      expect.arrayContaining([
        "Deno.permissions.revokeSync",
        "Deno.permissions.querySync",
        "Deno.connect",
        "Promise.prototype.then",
        "JSON.stringify",
        "JSON.parse",
        "TextEncoder.prototype.encode",
        "Uint8Array.prototype.set",
        "Object.defineProperty",
      ]),
    );
  });

  test.each(PATCH_NAMES.map((name) => [name]))("%s", async (name) => {
    const slot = open(await variant(name));
    await expectServes(slot, name);
    expectNoGrant(await report(slot), name);
    expect(slot.boots).toBe(1);
  });
});

test("a boot that finds a grant still held after revoking it fails loudly and never serves", async () => {
  // The order the finding exploited, rebuilt by hand: the module first (it patches
  // revokeSync into a no-op), the prelude after it. The prelude's check catches it.
  const dir = mkdtempSync(join(tmpdir(), "tether-hostile-old-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(FIXTURE, dir, { recursive: true });
  writeFileSync(join(dir, "chosen.ts"), `export const CHOSEN: string = "Deno.permissions.revokeSync";\n`);
  const sdk = join(REPO, "jail-runtime");
  const built = await esbuild.build({
    ...ARTIFACT_BUILD_OPTIONS,
    stdin: {
      contents: [
        `import * as m from ${JSON.stringify(join(dir, "index.ts"))};`,
        `import ${JSON.stringify(join(sdk, "cap/prelude.ts"))};`,
        `import { serving } from "@tether/ext";`,
        `await serving({ tools: m.tools });`,
      ].join("\n"),
      resolveDir: dir,
      loader: "js",
    },
    plugins: [
      {
        name: "sdk",
        setup: (b) => b.onResolve({ filter: /^@tether\/ext$/ }, () => ({ path: join(sdk, "ext/mod.ts") })),
      },
    ],
  });
  const artifact = join(dir, "old-order.js");
  writeFileSync(artifact, built.outputFiles[0]!.text);
  const stderr: string[] = [];
  const log = createLogger({
    level: "info",
    sink: (_, msg, fields) => void (msg === "satellite stderr" && stderr.push(String(fields.line))),
  });
  const manifest = readManifest(dir);
  const slot = open({ manifest, artifact, cleanup: () => {} }, { log });

  const outcome = await slot.invoke(call("echo", { text: "never" }));
  expect(outcome).toMatchObject({ ok: false, error: { code: "boot_failed" } });
  expect(slot.boots).toBe(0);
  for (let i = 0; i < 100 && !stderr.some((l) => l.includes("still held")); i++)
    await new Promise((r) => setTimeout(r, 30));
  expect(stderr.join("\n")).toMatch(
    /tether satellite: the \{"name":"net","host":"unix:\/run\/tether\/s\.sock"\} grant is still held after the boot revoked it \(query: granted, request: granted\); the extension is not run/,
  );
});
