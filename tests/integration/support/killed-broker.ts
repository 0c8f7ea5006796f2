/**
 * A broker that is about to be killed with SIGKILL: it boots one satellite of
 * manifests/echo, prints the satellite's socket folder, and waits.
 *
 *   node --import tsx tests/integration/support/killed-broker.ts
 */
import { bundleToTemp, slotFor } from "../../support/satellites.js";

const bundled = await bundleToTemp("manifests/echo");
const slot = slotFor(bundled);
const outcome = await slot.invoke({
  kind: "tool",
  name: "echo",
  args: '{"text":"up"}',
  strand: "k",
  deadlineMs: 10_000,
});
process.stdout.write(`${JSON.stringify({ ok: outcome.ok, dir: slot.process?.socketDir })}\n`);
setInterval(() => {}, 60_000);
