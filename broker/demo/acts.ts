/**
 * `make demo`'s reported acts: manifests/recipes runs named maintenance
 * recipes, and reports each shell command it would run as the act `shell.run`
 * (`ctx.act`) before running it. The tool call itself looks harmless (a
 * recipe's name), so guard's tool_call hook lets it through; the act carries
 * the command, and guard blocks `rm -rf` there: the command never runs and the
 * tool hands the model guard's reason. Both acts are in the trace.
 */
import { join } from "node:path";
import type { InvocationOutcome } from "../base/outcome.js";
import { textOf } from "../base/outcome.js";
import type { Broker } from "../broker.js";
import { queryHookTraces } from "../operator/audit.js";
import type { Session } from "../sessions/session.js";

const show = (outcome: InvocationOutcome<"tool">) =>
  outcome.ok ? textOf(outcome) : `${outcome.error.code}: ${outcome.error.msg}`;

export async function actsDemo(
  broker: Broker,
  session: Session,
  repo: string,
  step: (title: string) => void,
): Promise<void> {
  step("Reported acts: a tool tells the session's hooks what it is about to do; guard blocks rm -rf there");
  const { installed, status } = await broker.registry.install(join(repo, "manifests", "recipes"));
  broker.registry.approve("recipes", { by: "demo" });
  console.log(`  ${installed.name} ${installed.version}: ${status}, approved (It reports act shell.run)`);
  await session.reload();
  for (const recipe of ["tidy", "wipe"]) {
    const report = await session.callTool("run_recipe", JSON.stringify({ recipe }));
    console.log(`  run_recipe {"recipe":"${recipe}"} → ${show(report.outcome)}`);
    broker.ledger.flush();
    const rows = queryHookTraces(broker.store, { session: session.id, limit: 50 }).filter(
      (r) => r.subject === "shell.run" && r.aboutInvocation === report.invocationId,
    );
    const traced = rows.map((r) => `${r.event} ${r.extension}: ${r.answer}`).join(", ");
    console.log(`    act shell.run within ledger row ${report.invocationId}: ${traced || "no hook asked"}`);
  }
}
