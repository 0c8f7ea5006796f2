/**
 * `make demo`: the whole story in one readable run, on real jailed satellites.
 * With `--console` (`make demo CONSOLE=1`), then the operator console over the
 * demo's home for a minute (broker/demo/console.ts) before the home is removed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Broker } from "../broker.js";
import { createLogger } from "../base/log.js";
import { readDemoConsoleMs, readEnvironment } from "../cli/environment.js";
import { queryAudit, queryHookTraces, renderAudit, type HookTraceEntry } from "../operator/audit.js";
import { findBwrap, resolveSandbox } from "../jail/sandbox.js";
import { buildReview, renderReview } from "../registry/review.js";
import { type InvocationOutcome, textOf } from "../base/outcome.js";
import { Session, type ExtensionStatus } from "../sessions/session.js";
import { CONSOLE_MS, consoleDemo } from "./console.js";
import { DEMO_PORTS } from "./ports.js";
import { credentialsDemo } from "./credentials.js";
import { modelCallDemo } from "./model-call.js";
import { sessionKindsDemo } from "./session-kinds.js";
import { searchDemo } from "./search.js";
import { actsDemo } from "./acts.js";
import { storageDemo } from "./storage.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const USAGE = "usage: npx tsx broker/demo/run.ts [--console]   (make demo [CONSOLE=1])";
const args = process.argv.slice(2);
if (args.some((a) => a !== "--console")) {
  console.error(`demo: unknown argument ${args.find((a) => a !== "--console")}\n${USAGE}`);
  process.exit(2);
}
const withConsole = args.includes("--console");
let holdMs = 0;
try {
  if (withConsole) holdMs = readDemoConsoleMs() ?? CONSOLE_MS;
} catch (err) {
  console.error(`demo: ${(err as Error).message}`);
  process.exit(2);
}
const home = mkdtempSync(join(tmpdir(), "tether-demo-"));

function step(title: string): void {
  console.log(`\n== ${title}`);
}

/**
 * The first line of a message (a boot failure carries the
 * satellite's stderr), with what it ends in when that is a hint.
 */
function brief(message: string): string {
  const lines = message.split("\n");
  if (lines.length === 1) return message;
  const hint = /\((still wanted[^)]*)\)$/.exec(message);
  return `${lines[0]} …${hint !== null ? ` (${hint[1]})` : ""}`;
}

function show(outcome: InvocationOutcome<"tool" | "command">): string {
  if (!outcome.ok) return `error ${outcome.error.code}: ${brief(outcome.error.msg)}`;
  return textOf(outcome);
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
    server.once("error", (err) =>
      reject(new Error(`cannot start the demo weather service on 127.0.0.1:${DEMO_PORTS.weather}: ${err.message}`)),
    );
    server.listen(DEMO_PORTS.weather, "127.0.0.1", () => resolve(server));
  });
}

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");

const EXTENSIONS = [
  "echo",
  "misbehave",
  "weather",
  "guard",
  "briefing",
  "flaky",
  "flaky-digest",
  "scratchpad",
  "fold-results",
  "tickets",
  "ticket-digest",
];

/** One line per extension: what an active one serves, or why one is not active. */
function renderStatus(rows: readonly ExtensionStatus[]): string {
  const width = Math.max(...rows.map((r) => r.name.length));
  return rows
    .map((r) => {
      const head = `${r.name.padEnd(width)}  ${r.state.padEnd(8)}`;
      if (r.state !== "active") return `${head}  ${brief(r.reason ?? "")}`;
      const parts = [
        r.tools.length > 0 ? `tools ${r.tools.join(", ")}` : "",
        r.hooks.length > 0 ? `hooks ${r.hooks.join(", ")}` : "",
        r.commands.length > 0 ? `commands ${r.commands.map((c) => `/${c}`).join(", ")}` : "",
        r.managed ? "managed" : "",
        r.observes ? "observes" : "",
        r.routes.length > 0 ? `routes ${r.routes.join(", ")}` : "",
        r.compactions.length > 0 ? `compaction ${r.compactions.join(", ")}` : "",
      ].filter((p) => p !== "");
      return `${head}  ${parts.join("; ")}${r.priority !== 0 ? ` (priority ${r.priority})` : ""}`;
    })
    .join("\n");
}

/**
 * A session's per-hook trace (`tether audit --hooks`), as a
 * table: every hook asked, what it answered, how long it took.
 */
function renderTrace(rows: readonly HookTraceEntry[]): string {
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
  const cells = rows.map((r) => [
    r.aboutInvocation === null ? "" : `#${r.aboutInvocation}`,
    r.event,
    clip(r.subject, 60),
    r.extension,
    r.answer,
    r.durationMs.toFixed(1),
    clip(r.detail.replace(/\s+/g, " "), 90),
  ]);
  const header = ["call", "event", "subject", "extension", "answer", "ms", "detail"];
  const right = new Set([0, 5]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) =>
    c
      .map((cell, i) =>
        right.has(i) ? cell.padStart(widths[i]!) : i === c.length - 1 ? cell : cell.padEnd(widths[i]!),
      )
      .join("  ")
      .trimEnd();
  return [line(header), ...cells.map(line)].join("\n");
}

async function main(): Promise<void> {
  step("The jail");
  // The tether command's environment (TETHER_INSECURE_NO_SANDBOX, TETHER_DENO, ...), read once at the edge.
  const environment = readEnvironment();
  const sandbox = resolveSandbox(environment.sandbox);
  console.log(
    sandbox === "bwrap"
      ? `OS sandbox: bubblewrap (${findBwrap()}) + Deno permissions`
      : "OS sandbox: NONE (insecure mode) — Deno permissions only",
  );

  step("Install the example extensions into a temporary home");
  console.log(`home: ${home}`);
  // The weather service runs on loopback: the operator allows rules that name private addresses.
  writeFileSync(join(home, "policy.toml"), '[net]\nallow_private = true\ndeny = ["*.evil.example"]\n');
  console.log("  operator policy: allow_private = true (rules may name loopback), deny *.evil.example");
  const weatherService = await startWeatherService();
  const broker = Broker.open({ ...environment, home, graceMs: 250, log: createLogger({ level: "error" }) });
  let session: Session | null = null;
  try {
    for (const name of EXTENSIONS) {
      const { installed, status } = await broker.registry.install(join(REPO, "manifests", name), (line) =>
        console.log(`  … ${line}`),
      );
      console.log(`  ${installed.name} ${installed.version}: ${status}`);
    }

    step("Calling before approval is refused");
    await broker
      .callTool("echo", "echo", '{"text":"hi"}', { session: "default" })
      .catch((err: Error) => console.log(`  ${err.message}`));

    step("Review (what the operator sees), then approve");
    for (const name of ["echo", "weather", "guard"]) {
      const installed = broker.registry.require(name);
      console.log(indent(renderReview(buildReview(installed, broker.registry.status(installed), null), installed)));
      console.log("");
    }
    for (const name of EXTENSIONS) {
      broker.registry.approve(name, { by: "demo" });
      console.log(`  approved ${name}`);
    }

    step("Open a session: each extension boots whole or not at all");
    const workspace = join(home, "acme-app");
    mkdirSync(workspace);
    let started = Date.now();
    session = await Session.open(broker, { id: "demo", workspace });
    console.log(`  session '${session.id}' in ${workspace}: booted in ${Date.now() - started} ms`);
    console.log(indent(renderStatus(session.status())));

    step("A failing extension: it and its dependents are inactive, the rest keep working");
    console.log(`  feed_digest → ${show((await session.callTool("feed_digest", "{}")).outcome)}`);
    console.log(`  feed_items → ${show((await session.callTool("feed_items", "{}")).outcome)}`);
    console.log(`  echo → ${show((await session.callTool("echo", '{"text":"still here"}')).outcome)}`);

    await sessionKindsDemo(session, step);
    await searchDemo(broker, session, REPO, step);
    await actsDemo(broker, session, REPO, step);

    step("The harness's events: a context extension briefs the model");
    const opened = await session.fire("session_start", { source: "startup" });
    console.log(`  session_start → context: ${JSON.stringify(opened.context)}`);
    const prompt = "What's the weather in Lisbon tomorrow?";
    const turn = await session.fire("before_agent_start", { prompt });
    console.log(
      `  before_agent_start "${prompt}" → ` +
        `context: ${JSON.stringify(turn.context)}${turn.block !== null ? `, blocked by ${turn.block.by}` : ""}`,
    );
    const messages = [{ role: "user", content: prompt }];
    const ctx = await session.fire("context", { messages });
    console.log(
      `  context (${messages.length} message) → ${ctx.messages?.length ?? messages.length} ` +
        `messages; added: ${JSON.stringify((ctx.messages ?? []).slice(messages.length))}`,
    );

    step("A jailed extension answers tool calls, with partial reports");
    started = Date.now();
    const counted = await session.callTool("count", '{"n":3}', {
      strand: "demo",
      onReport: (text) => console.log(`  partial: ${text}`),
    });
    console.log(`  count → ${show(counted.outcome)}   (${Date.now() - started} ms, guard asked first)`);
    started = Date.now();
    const echoed = await session.callTool("echo", '{"text":"hello from the jail"}');
    console.log(`  echo → ${show(echoed.outcome)}   (warm: ${Date.now() - started} ms)`);
    console.log(`  echo with a number → ${show((await session.callTool("echo", '{"text":42}')).outcome)}`);

    step("The guard blocks a dangerous tool call before it runs; the model reads why");
    const dangerous = await session.callTool("echo", '{"text":"cleaning up: rm -rf /"}');
    console.log(`  echo "cleaning up: rm -rf /" → ${show(dangerous.outcome)}`);
    console.log(`  blocked by: ${dangerous.blockedBy}; ledger row ${dangerous.invocationId} (outcome blocked)`);
    console.log(`  echo "rm notes.txt" → ${show((await session.callTool("echo", '{"text":"rm notes.txt"}')).outcome)}`);

    step("A tool that throws is answered crashed; the satellite keeps serving");
    console.log(`  throw → ${show((await session.callTool("throw", "{}")).outcome)}`);
    console.log(`  sleep → ${show((await session.callTool("sleep", '{"ms":10}')).outcome)}`);

    step("A tool that loops forever is answered timeout; the next call is served by a fresh satellite");
    started = Date.now();
    console.log(`  loop → ${show((await session.callTool("loop", "{}")).outcome)}  (${Date.now() - started} ms)`);
    console.log(`  sleep → ${show((await session.callTool("sleep", '{"ms":10}')).outcome)}`);

    step("A heap bomb kills only its own satellite");
    console.log(`  bomb → ${show((await session.callTool("bomb", "{}")).outcome)}`);
    console.log(`  sleep → ${show((await session.callTool("sleep", '{"ms":10}')).outcome)}`);

    step("Brokered egress: the satellite has no network; the broker fetches what the approval allows");
    const fetchUrl = async (url: string) =>
      show((await session!.callTool("fetch_url", JSON.stringify({ url }))).outcome);
    const forecast = await session.callTool("forecast", '{"city":"Lisbon"}', {
      onReport: (t) => console.log(`  partial: ${t}`),
    });
    console.log(`  forecast → ${show(forecast.outcome)}`);
    const admin = `http://127.0.0.1:${DEMO_PORTS.weather}/admin`;
    console.log(`  fetch ${admin} → ${await fetchUrl(admin)}`);
    console.log(`  fetch https://api.evil.example/ → ${await fetchUrl("https://api.evil.example/")}`);
    console.log(
      `  fetch http://169.254.169.254/latest/meta-data/ ` +
        `→ ${await fetchUrl("http://169.254.169.254/latest/meta-data/")}`,
    );
    const decimal = `http://2130706433:${DEMO_PORTS.weather}/v1/forecast?city=Porto`;
    console.log(`  fetch ${decimal} (the rule's own address, written in decimal) → ${await fetchUrl(decimal)}`);

    step("The operator flags a host: the guard's cap_call hook refuses what policy and approval allow");
    const porto = `http://127.0.0.1:${DEMO_PORTS.weather}/v1/forecast?city=Porto`;
    console.log(`  fetch ${porto} → ${await fetchUrl(porto)}`);
    console.log(`  /flag 127.0.0.1 → ${show((await session.runCommand("/flag 127.0.0.1")).outcome)}`);
    console.log(`  fetch ${porto} → ${await fetchUrl(porto)}`);
    console.log(`  forecast → ${show((await session.callTool("forecast", '{"city":"Porto"}')).outcome)}`);
    console.log(`  /unflag 127.0.0.1 → ${show((await session.runCommand("/unflag 127.0.0.1")).outcome)}`);
    console.log(`  fetch ${porto} → ${await fetchUrl(porto)}`);

    step("An offline session: every fetch is refused");
    session.setPolicy({ offline: true });
    console.log(
      `  the session goes offline; forecast ` +
        `→ ${show((await session.callTool("forecast", '{"city":"Lisbon"}')).outcome)}`,
    );
    session.setPolicy({});

    step("An MCP client that knows nothing of Tether: `tether mcp --session demo-mcp` on stdio");
    await mcpClientDemo(workspace);

    await credentialsDemo(broker, REPO, step);
    await modelCallDemo(broker, session, REPO, step);
    await storageDemo(
      () => Broker.open({ ...environment, home, graceMs: 250, log: createLogger({ level: "error" }) }),
      REPO,
      home,
      step,
    );

    step("Revoke: the extension drops out of the session; the rest keep working");
    broker.registry.revoke("misbehave");
    console.log(`  sleep → ${show((await session.callTool("sleep", '{"ms":10}')).outcome)}`);
    const misbehave = session.status().find((s) => s.name === "misbehave");
    console.log(`  misbehave: ${misbehave?.state} — ${misbehave?.reason}`);
    console.log(`  echo → ${show((await session.callTool("echo", '{"text":"unaffected"}')).outcome)}`);
    await broker
      .callTool("misbehave", "sleep", '{"ms":10}', { session: "later" })
      .catch((err: Error) => console.log(`  another session: ${err.message}`));

    step(
      "The per-hook trace (tether audit --hooks): every hook " +
        "asked, in the order asked, what it answered, how long it took",
    );
    console.log("  call = the ledger row the event was about (the tool call; for cap_call, the invocation making it)");
    broker.ledger.flush();
    // In the order the hooks were asked (their own ledger rows): a tool_call verdict is
    // written once its call has a ledger row, after that call's cap_calls.
    const asked = (e: HookTraceEntry) => e.hookInvocation ?? Number.MAX_SAFE_INTEGER;
    const trace = queryHookTraces(broker.store, { session: session.id }).sort((a, b) => asked(a) - asked(b));
    console.log(indent(renderTrace(trace)));

    step("The audit trail (tether audit)");
    broker.ledger.flush();
    console.log(indent(renderAudit(queryAudit(broker.store, {}))));
    step("Only the refusals (tether audit --denied)");
    console.log(indent(renderAudit(queryAudit(broker.store, { denied: true }))));
  } finally {
    step("Shut down (drain, then stdin EOF → SIGTERM → SIGKILL)");
    if (session !== null) await session.close();
    await broker.close();
    weatherService.close();
    console.log(withConsole ? "  all satellites stopped" : "  all satellites stopped; temporary home removed");
    if (!withConsole) rmSync(home, { recursive: true, force: true });
  }
  if (withConsole) {
    await consoleDemo({ broker: { ...environment, home, graceMs: 250 }, holdMs, step });
    rmSync(home, { recursive: true, force: true });
    console.log("  console closed; temporary home removed");
  }
}

/** The MCP SDK's own client, driving `tether mcp` as any MCP host would. */
async function mcpClientDemo(workspace: string): Promise<void> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(REPO, "bin/tether.js"), "mcp", "--session", "demo-mcp", "--workspace", workspace, "--home", home],
    stderr: "pipe",
  });
  const client = new Client({ name: "demo-mcp-client", version: "1.0.0" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    console.log(`  tools/list → ${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`);
    const count = tools.find((t) => t.name === "count");
    console.log(`  count's inputSchema (the manifest's, as is): ${JSON.stringify(count?.inputSchema)}`);
    const progress: string[] = [];
    const called = await client.callTool({ name: "count", arguments: { n: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? String(p.progress)),
    });
    console.log(
      `  tools/call count {n: 3} → progress ${JSON.stringify(progress)}; result ${JSON.stringify(called.content)}`,
    );
    const blocked = await client.callTool({ name: "echo", arguments: { text: "rm -rf ~" } });
    console.log(
      `  tools/call echo "rm -rf ~" → isError ${String(blocked.isError)}: ${JSON.stringify(blocked.content)}`,
    );
  } finally {
    await client.close();
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  rmSync(home, { recursive: true, force: true });
  process.exit(1);
});
