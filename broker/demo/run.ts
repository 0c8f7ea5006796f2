/**
 * `make demo`: the whole story in one readable run, on real jailed satellites.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../broker.js";
import { createLogger } from "../log.js";
import { queryAudit, renderAudit } from "../cli/audit.js";
import { findBwrap, resolveSandbox } from "../jail/sandbox.js";
import { buildReview, renderReview } from "../registry/review.js";
import type { InvocationOutcome } from "../satellite/process.js";

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

const indent = (text: string) => text.split("\n").map((l) => `  ${l}`).join("\n");

async function main(): Promise<void> {
  step("The jail");
  const sandbox = resolveSandbox();
  console.log(sandbox === "bwrap" ? `OS sandbox: bubblewrap (${findBwrap()}) + Deno permissions` : "OS sandbox: NONE (insecure mode) — Deno permissions only");

  step("Install the example extensions into a temporary home");
  console.log(`home: ${home}`);
  const broker = Broker.open({ home, graceMs: 250, log: createLogger({ level: "error" }) });
  try {
    for (const name of ["echo", "misbehave"]) {
      const { installed, status } = await broker.registry.install(join(REPO, "manifests", name), (line) => console.log(`  … ${line}`));
      console.log(`  ${installed.name} ${installed.version}: ${status}`);
    }

    step("Calling before approval is refused");
    await broker.callTool("echo", "echo", '{"text":"hi"}').catch((err: Error) => console.log(`  ${err.message}`));

    step("Review (what the operator sees), then approve");
    const echo = broker.registry.require("echo");
    console.log(indent(renderReview(buildReview(echo, broker.registry.status(echo), null), echo)));
    for (const name of ["echo", "misbehave"]) {
      broker.registry.approve(name, { by: "demo" });
      console.log(`  approved ${name}`);
    }

    step("A jailed extension answers tool calls, with partial reports");
    let started = Date.now();
    const counted = await broker.callTool("echo", "count", '{"n":3}', { strand: "demo", onReport: (text) => console.log(`  partial: ${text}`) });
    console.log(`  count → ${show(counted)}   (cold: boot + call ${Date.now() - started} ms)`);
    started = Date.now();
    const echoed = await broker.callTool("echo", "echo", '{"text":"hello from the jail"}');
    console.log(`  echo → ${show(echoed)}   (warm: ${Date.now() - started} ms)`);
    console.log(`  echo with a number → ${show(await broker.callTool("echo", "echo", '{"text":42}'))}`);

    step("A tool that throws is answered crashed; the satellite keeps serving");
    console.log(`  throw → ${show(await broker.callTool("misbehave", "throw", "{}"))}`);
    console.log(`  sleep → ${show(await broker.callTool("misbehave", "sleep", '{"ms":10}'))}`);

    step("A tool that loops forever is answered timeout; the next call is served by a fresh satellite");
    started = Date.now();
    console.log(`  loop → ${show(await broker.callTool("misbehave", "loop", "{}"))}  (${Date.now() - started} ms)`);
    console.log(`  sleep → ${show(await broker.callTool("misbehave", "sleep", '{"ms":10}'))}`);

    step("A heap bomb kills only its own satellite");
    console.log(`  bomb → ${show(await broker.callTool("misbehave", "bomb", "{}"))}`);
    console.log(`  sleep → ${show(await broker.callTool("misbehave", "sleep", '{"ms":10}'))}`);

    step("Revoke: the next call is refused");
    broker.registry.revoke("misbehave");
    await broker.callTool("misbehave", "sleep", '{"ms":10}', { session: "later" }).catch((err: Error) => console.log(`  ${err.message}`));

    step("The audit trail");
    broker.ledger.flush();
    console.log(indent(renderAudit(queryAudit(broker.store, {}))));
  } finally {
    step("Shut down (drain, then stdin EOF → SIGTERM → SIGKILL)");
    await broker.close();
    rmSync(home, { recursive: true, force: true });
    console.log("  all satellites stopped; temporary home removed");
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  rmSync(home, { recursive: true, force: true });
  process.exit(1);
});
