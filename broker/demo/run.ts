/**
 * `make demo`: the whole story in one readable run, on real jailed satellites.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleExtension } from "../install/bundle.js";
import { readManifest } from "../install/manifest.js";
import { findBwrap, resolveSandbox } from "../jail/sandbox.js";
import { silentLogger } from "../log.js";
import type { InvocationOutcome } from "../satellite/process.js";
import { SatelliteSlot } from "../satellite/slot.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const home = mkdtempSync(join(tmpdir(), "tether-demo-"));

function step(title: string): void {
  console.log(`\n== ${title}`);
}

function show(outcome: InvocationOutcome): string {
  if (!outcome.ok) return `error ${outcome.error.code}: ${outcome.error.msg}`;
  const value = outcome.value as { content: Array<{ type: string; text?: string; json?: unknown }> };
  return value.content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json))).join(" | ");
}

async function install(name: string): Promise<SatelliteSlot> {
  const dir = join(REPO, "manifests", name);
  const manifest = readManifest(dir);
  const started = Date.now();
  const artifact = await bundleExtension(dir, manifest);
  const path = join(home, `${name}.js`);
  writeFileSync(path, artifact.code);
  console.log(`installed ${name}@${manifest.version}: ${manifest.tool.length} tools, artifact ${(artifact.code.length / 1024).toFixed(0)} KiB sha256:${artifact.sha256.slice(0, 12)} (${Date.now() - started} ms)`);
  return new SatelliteSlot({
    idleMs: 0,
    spec: {
      name,
      artifact: path,
      declared: { tools: manifest.tool.map((t) => t.name), hooks: manifest.hook.map((h) => h.event) },
      sandbox: resolveSandbox(),
      memoryMb: manifest.limits.memory_mb,
      bootTimeoutMs: 10_000,
      graceMs: 250,
      ladderStepMs: 1_000,
      log: silentLogger,
    },
  });
}

async function main(): Promise<void> {
  step("The jail");
  const sandbox = resolveSandbox();
  console.log(sandbox === "bwrap" ? `OS sandbox: bubblewrap (${findBwrap()}) + Deno permissions` : "OS sandbox: NONE (insecure mode) — Deno permissions only");

  step("Install the example extensions into a temporary home");
  console.log(`home: ${home}`);
  const echo = await install("echo");
  const misbehave = await install("misbehave");

  try {
    step("A jailed extension answers tool calls, with partial reports");
    let started = Date.now();
    const counted = await echo.invoke(
      { kind: "tool", name: "count", args: '{"n":3}', strand: "demo", deadlineMs: 5_000 },
      { onReport: (text) => console.log(`  partial: ${text}`) },
    );
    console.log(`  count → ${show(counted)}   (cold: boot + call ${Date.now() - started} ms)`);
    started = Date.now();
    const echoed = await echo.invoke({ kind: "tool", name: "echo", args: '{"text":"hello from the jail"}', strand: "demo", deadlineMs: 5_000 });
    console.log(`  echo → ${show(echoed)}   (warm: ${Date.now() - started} ms)`);
    const wrong = await echo.invoke({ kind: "tool", name: "echo", args: '{"text":42}', strand: "demo", deadlineMs: 5_000 });
    console.log(`  echo with a number → ${show(wrong)}`);

    step("A tool that throws is answered crashed; the satellite keeps serving");
    console.log(`  throw → ${show(await misbehave.invoke({ kind: "tool", name: "throw", args: "{}", strand: "demo", deadlineMs: 2_000 }))}`);
    console.log(`  sleep → ${show(await misbehave.invoke({ kind: "tool", name: "sleep", args: '{"ms":10}', strand: "demo", deadlineMs: 2_000 }))}  (same satellite: ${misbehave.boots} boot)`);

    step("A tool that loops forever is answered timeout; the next call is served by a fresh satellite");
    started = Date.now();
    console.log(`  loop → ${show(await misbehave.invoke({ kind: "tool", name: "loop", args: "{}", strand: "demo", deadlineMs: 500 }))}  (${Date.now() - started} ms)`);
    console.log(`  sleep → ${show(await misbehave.invoke({ kind: "tool", name: "sleep", args: '{"ms":10}', strand: "demo", deadlineMs: 2_000 }))}  (boots so far: ${misbehave.boots})`);

    step("A heap bomb kills only its own satellite");
    console.log(`  bomb → ${show(await misbehave.invoke({ kind: "tool", name: "bomb", args: "{}", strand: "demo", deadlineMs: 20_000 }))}`);
    console.log(`  sleep → ${show(await misbehave.invoke({ kind: "tool", name: "sleep", args: '{"ms":10}', strand: "demo", deadlineMs: 2_000 }))}`);
  } finally {
    step("Shut down (drain, then stdin EOF → SIGTERM → SIGKILL)");
    await Promise.all([echo.close(), misbehave.close()]);
    rmSync(home, { recursive: true, force: true });
    console.log("  all satellites stopped; temporary home removed");
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  rmSync(home, { recursive: true, force: true });
  process.exit(1);
});
