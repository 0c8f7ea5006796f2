/**
 * `make bench` (hooks): what a session and its hook bus add to a tool call.
 * One run, interleaved so machine noise hits every variant alike:
 *  A. broker.callTool: the floor (approval, schema, ledger, satellite);
 *  B. session.callTool with no extension hooking tool_call or tool_result:
 *     the session layer and an empty bus;
 *  C. the same with one extension whose tool_call hook proceeds (one more
 *     satellite round trip per call, plus its ledger row and trace row);
 *  D. the same with the built-in hooks extension running one trivial command
 *     hook (`true`): a process spawn per call.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { Session } from "../broker/sessions/session.js";
import { fmt, summarise, table } from "./lib/stats.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const home = mkdtempSync(join(tmpdir(), "tether-bench-hooks-"));
const broker = Broker.open({ home, log: createLogger({ level: "error" }) });
const args = '{"text":"hi"}';

try {
  for (const dir of [join(HERE, "../manifests/echo"), join(HERE, "fixtures/nop-guard")]) {
    const { installed } = await broker.registry.install(dir);
    broker.registry.approve(installed.manifest.name);
  }
  writeFileSync(
    join(home, "hooks.json"),
    JSON.stringify({ hooks: { PreToolUse: [{ matcher: "echo", hooks: [{ type: "command", command: "true" }] }] } }),
  );

  const bare = await Session.open(broker, { id: "bare", workspace: home });
  bare.prefer("nop-guard", false);
  await bare.reload();
  const guarded = await Session.open(broker, { id: "guarded", workspace: home });
  const scripted = await Session.open(broker, { id: "scripted", workspace: home });
  scripted.prefer("nop-guard", false);
  scripted.prefer("hooks", true);
  await scripted.reload();

  const variants: [string, () => Promise<unknown>][] = [
    ["A  broker.callTool (floor)", () => broker.callTool("echo", "echo", args, { session: "floor" })],
    ["B  session.callTool, no hooks", () => bare.callTool("echo", args)],
    ["C  session.callTool, one satellite tool_call hook", () => guarded.callTool("echo", args)],
    ["D  session.callTool, one command hook (`true`)", () => scripted.callTool("echo", args)],
  ];
  const samples = variants.map(() => [] as bigint[]);
  for (let i = 0; i < 30; i++) for (const [, run] of variants) await run();
  const N = 300;
  for (let i = 0; i < N; i++) {
    for (const [k, [, run]] of variants.entries()) {
      const t = process.hrtime.bigint();
      await run();
      samples[k]!.push(process.hrtime.bigint() - t);
    }
  }
  const stats = samples.map((s) => summarise(s));
  const floor = stats[0]!.p50;
  console.log("\n== What a session and its hook bus add to a warm tool call\n");
  console.log(
    table(
      ["variant", "p50 µs", "p99 µs", "× floor (p50)"],
      variants.map(([name], k) => [name, fmt(stats[k]!.p50), fmt(stats[k]!.p99), (stats[k]!.p50 / floor).toFixed(2)]),
    ),
  );
  await Promise.all([bare.close(), guarded.close(), scripted.close()]);
} finally {
  await broker.close();
  rmSync(home, { recursive: true, force: true });
}
