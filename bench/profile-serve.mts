/**
 * One warm `tool.call` through `tether serve`, over and over, for a profiler:
 * the server and a `ws` client in this process (as bench/vs-mcp.ts runs it),
 * 500 warm-up calls, then N timed ones (mean wall time, this process's CPU per
 * call), and the same for Session.callTool beside it. Profile with
 *   node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile-serve.mts
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../broker/base/log.js";
import { Session } from "../broker/sessions/session.js";
import { ServeServer } from "../broker/tether-serve/serve-server.js";
import { ECHO_DIR, installApproved, openBroker } from "./lib/home.js";
import { RpcClient } from "./lib/rpc-ws.js";

const home = mkdtempSync(join(tmpdir(), "prof-serve-"));
const broker = openBroker(home);
await installApproved(broker, ECHO_DIR);
const token = randomBytes(32).toString("hex");
const server = new ServeServer({ broker, token, log: createLogger({ level: "error" }), say: () => {} });
const { url } = await server.listen({ socket: join(home, "serve.sock") });
const rpc = await RpcClient.connect(url, token);
await rpc.request("session.open", { id: "serve", workspace: home });
const lib = await Session.open(broker, { id: "lib", workspace: home });
const N = Number(process.env.N ?? 3000);

async function measure(name: string, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 500; i++) await call();
  const t = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) await call();
  const c = process.cpuUsage(c0);
  const us = Number(process.hrtime.bigint() - t) / 1000 / N;
  console.log(`${name}: mean ${us.toFixed(1)} µs/call, node cpu ${((c.user + c.system) / N).toFixed(1)} µs/call`);
}

const only = process.env.ONLY;
for (let round = 0; round < 2; round++) {
  if (only !== "serve") await measure("Session.callTool", () => lib.callTool("echo", '{"text":"hi"}'));
  if (only !== "lib")
    await measure("tether serve", async () => {
      const answer = await rpc.send("tool.call", { session: "serve", tool: "echo", arguments: { text: "hi" } });
      if (answer.error !== undefined) throw new Error(answer.error.message);
    });
}
await rpc.close();
await lib.close();
await server.shutdown(new Promise(() => {}));
await broker.close();
rmSync(home, { recursive: true, force: true });
