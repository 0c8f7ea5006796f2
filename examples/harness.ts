/**
 * A harness using Tether as a library, end to end (docs/harness.md walks
 * through it). Run it: `npx tsx examples/harness.ts`.
 *
 * It installs four of the example extensions into a temporary home, approves
 * them, opens a session, lists the tools with their schemas, calls tools with
 * partials (a callback, then an async iterator), cancels a call, fires events,
 * runs a command, and closes everything.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker, Session, textOf } from "../broker/index.js";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..");
const home = mkdtempSync(join(tmpdir(), "tether-harness-"));

const show = textOf;

// 1. Open a broker on a home folder; install and approve (what `tether install` / `tether approve` do).
const broker = Broker.open({ home });
try {
  for (const name of ["echo", "misbehave", "guard", "briefing"]) {
    await broker.registry.install(join(REPO, "manifests", name));
    broker.registry.approve(name, { by: "harness example" });
  }

  // 2. Open a session: its extensions boot, each whole or not at all.
  const session = await Session.open(broker, { id: "example", workspace: REPO });
  for (const ext of session.status()) console.log(`${ext.name}: ${ext.state}${ext.reason ? ` (${ext.reason})` : ""}`);

  // 3. The tools the model may call, with their JSON Schemas.
  for (const tool of session.tools())
    console.log(`tool ${tool.name} (${tool.extension}): ${JSON.stringify(tool.parameters)}`);

  // 4. Events: the composed verdict of every hook, in registry order.
  const started = await session.fire("session_start", { source: "startup" });
  console.log(`session_start → context ${JSON.stringify(started.context)}, notes ${JSON.stringify(started.notes)}`);

  // 5. A tool call with partials through a callback.
  const counted = await session.callTool("count", '{"n":3}', { onReport: (text) => console.log(`  partial: ${text}`) });
  console.log(`count → ${show(counted.outcome)}`);

  // 6. The same with an async iterator.
  for await (const step of session.stream("count", '{"n":2}')) {
    console.log(step.type === "partial" ? `  partial: ${step.text}` : `count → ${show(step.result.outcome)}`);
  }

  // 7. Cancellation: the satellite's ctx.signal aborts; the call ends `cancelled`.
  const slow = await session.callTool("sleep", '{"ms":10000}', { signal: AbortSignal.timeout(300) });
  console.log(`sleep (cancelled after 300 ms) → ${show(slow.outcome)}`);

  // 8. A hook blocks a call: the model reads the reason.
  const blocked = await session.callTool("echo", '{"text":"rm -rf /"}');
  console.log(`echo "rm -rf /" → ${show(blocked.outcome)} (blocked by ${blocked.blockedBy})`);

  // 9. A command.
  const flagged = await session.runCommand("/flag example.com");
  console.log(`/flag example.com → ${show(flagged.outcome)}`);

  // 10. Close the session (open calls finish), then the broker. `destroy()` on either aborts instead.
  await session.close();
} finally {
  await broker.close();
  rmSync(home, { recursive: true, force: true });
}
