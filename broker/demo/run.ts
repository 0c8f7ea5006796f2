/**
 * `make demo`: the whole story in one readable run, on real jailed satellites.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
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

/** The demo's weather service, on loopback where the weather extension's rule points. */
function startWeatherService(): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/v1/forecast") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ city: url.searchParams.get("city"), summary: "sunny with a light breeze", high_c: 21 }));
      return;
    }
    res.statusCode = 404;
    res.end("not here");
  });
  return new Promise((resolve, reject) => {
    server.once("error", (err) => reject(new Error(`cannot start the demo weather service on 127.0.0.1:47311: ${err.message}`)));
    server.listen(47311, "127.0.0.1", () => resolve(server));
  });
}

const indent = (text: string) => text.split("\n").map((l) => `  ${l}`).join("\n");

async function main(): Promise<void> {
  step("The jail");
  const sandbox = resolveSandbox();
  console.log(sandbox === "bwrap" ? `OS sandbox: bubblewrap (${findBwrap()}) + Deno permissions` : "OS sandbox: NONE (insecure mode) — Deno permissions only");

  step("Install the example extensions into a temporary home");
  console.log(`home: ${home}`);
  // The weather service runs on loopback: the operator allows rules that name private addresses.
  writeFileSync(join(home, "policy.toml"), '[net]\nallow_private = true\ndeny = ["*.evil.example"]\n');
  console.log("  operator policy: allow_private = true (rules may name loopback), deny *.evil.example");
  const weatherService = await startWeatherService();
  const broker = Broker.open({ home, graceMs: 250, log: createLogger({ level: "error" }) });
  try {
    for (const name of ["echo", "misbehave", "weather"]) {
      const { installed, status } = await broker.registry.install(join(REPO, "manifests", name), (line) => console.log(`  … ${line}`));
      console.log(`  ${installed.name} ${installed.version}: ${status}`);
    }

    step("Calling before approval is refused");
    await broker.callTool("echo", "echo", '{"text":"hi"}').catch((err: Error) => console.log(`  ${err.message}`));

    step("Review (what the operator sees), then approve");
    for (const name of ["echo", "weather"]) {
      const installed = broker.registry.require(name);
      console.log(indent(renderReview(buildReview(installed, broker.registry.status(installed), null), installed)));
      console.log("");
    }
    for (const name of ["echo", "misbehave", "weather"]) {
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

    step("Brokered egress: the satellite has no network; the broker fetches what the approval allows");
    console.log(`  forecast → ${show(await broker.callTool("weather", "forecast", '{"city":"Lisbon"}', { onReport: (t) => console.log(`  partial: ${t}`) }))}`);
    console.log(`  fetch http://127.0.0.1:47311/admin → ${show(await broker.callTool("weather", "fetch_url", '{"url":"http://127.0.0.1:47311/admin"}'))}`);
    console.log(`  fetch https://api.evil.example/ → ${show(await broker.callTool("weather", "fetch_url", '{"url":"https://api.evil.example/"}'))}`);
    console.log(`  fetch http://169.254.169.254/latest/meta-data/ → ${show(await broker.callTool("weather", "fetch_url", '{"url":"http://169.254.169.254/latest/meta-data/"}'))}`);
    console.log(`  fetch http://2130706433:47311/v1/forecast?city=Porto (the rule's own address, written in decimal) → ${show(await broker.callTool("weather", "fetch_url", '{"url":"http://2130706433:47311/v1/forecast?city=Porto"}'))}`);
    broker.setSessionPolicy("default", { offline: true });
    console.log(`  the session goes offline; forecast → ${show(await broker.callTool("weather", "forecast", '{"city":"Lisbon"}'))}`);
    broker.setSessionPolicy("default", {});

    step("Revoke: the next call is refused");
    broker.registry.revoke("misbehave");
    await broker.callTool("misbehave", "sleep", '{"ms":10}', { session: "later" }).catch((err: Error) => console.log(`  ${err.message}`));

    step("The audit trail (tether audit)");
    broker.ledger.flush();
    console.log(indent(renderAudit(queryAudit(broker.store, {}))));
    step("Only the refusals (tether audit --denied)");
    console.log(indent(renderAudit(queryAudit(broker.store, { denied: true }))));
  } finally {
    step("Shut down (drain, then stdin EOF → SIGTERM → SIGKILL)");
    await broker.close();
    weatherService.close();
    rmSync(home, { recursive: true, force: true });
    console.log("  all satellites stopped; temporary home removed");
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  rmSync(home, { recursive: true, force: true });
  process.exit(1);
});
