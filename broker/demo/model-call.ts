/**
 * `make demo`'s model-call part: the fold-results extension's compaction
 * strategy `summarise-with-model` asks a model itself (`model.complete`,
 * budgeted by its `[model]` table), routed through the session's provider
 * preference to the OpenAI-compatible example provider, against the fake
 * server of examples/servers/ on the loopback port its manifest names (./ports.ts).
 * First while a run of the session is active — refused, `busy_session` — then
 * once the turn has settled.
 */
import { join } from "node:path";
import type { Broker } from "../broker.js";
import { queryAudit } from "../operator/audit.js";
import type { Session } from "../sessions/session.js";
import { fakeOpenAi } from "../../examples/servers/fake-providers.js";
import { DEMO_PORTS } from "./ports.js";

const CONVERSATION = [
  { role: "user", content: "Why does the build fail?" },
  { role: "tool", name: "sh", content: "src/a.ts(3,1): error TS2304: Cannot find name 'x'." },
  { role: "assistant", content: "`x` is not defined in src/a.ts." },
  { role: "user", content: "Fix it." },
  { role: "assistant", content: "Done: declared x." },
  { role: "user", content: "Thanks. Now the tests?" },
  { role: "assistant", content: "Running them." },
];

export async function modelCallDemo(
  broker: Broker,
  session: Session,
  repo: string,
  step: (title: string) => void,
): Promise<void> {
  step("A model call from inside an extension: a compaction strategy summarises with a model");
  const script = {
    deltas: ["The build ", "failed on an ", "undefined x; ", "it was declared."],
    inputTokens: 40,
    outputTokens: 12,
  };
  let provider;
  try {
    provider = await fakeOpenAi(script, DEMO_PORTS.openAi);
  } catch (err) {
    throw new Error(
      `cannot start the demo OpenAI-compatible provider on 127.0.0.1:${DEMO_PORTS.openAi}: ${(err as Error).message}`,
    );
  }
  try {
    if (broker.registry.get("openai-compatible") === null) {
      await broker.registry.install(join(repo, "manifests", "openai-compatible"));
      broker.registry.approve("openai-compatible", { by: "demo" });
    }
    session.preferProviders({ rank: ["local-openai"] });
    console.log("  fold-results declares [model]: only local-openai, local-anthropic; 512 tokens a call, 50000 a day");
    const compact = () =>
      session.compact({ messages: CONVERSATION, reason: "requested", budget: 300, strategy: "summarise-with-model" });
    await session.fire("before_agent_start", { prompt: "Run the tests" });
    const during = await compact();
    console.log(
      `  during a turn (before_agent_start fired) → ` +
        (during.outcome.ok
          ? during.outcome.summary
          : `error ${during.outcome.error.code}: ${during.outcome.error.msg}`),
    );
    await session.fire("agent_settled", {});
    const after = await compact();
    if (!after.outcome.ok)
      console.log(`  after the turn → error ${after.outcome.error.code}: ${after.outcome.error.msg}`);
    else {
      console.log(`  after the turn settled → summary: ${after.outcome.summary}`);
      for (const fold of session.folds(after.outcome.compactionId))
        console.log(`    fold messages ${fold.from}–${fold.to}: ${fold.text}`);
    }
    console.log(`  the fake API was asked ${provider.requests.length} time(s); the audit row:`);
    broker.ledger.flush();
    const rows = queryAudit(broker.store, { extension: "fold-results" }).flatMap((e) =>
      e.type !== "invocation" && e.capability === "model.complete" ? [e] : [],
    );
    for (const r of rows.slice(-2))
      console.log(`    model.complete ${r.target} → ${r.decision.toUpperCase()} by ${r.rule} (${r.bytes} tokens)`);
  } finally {
    session.preferProviders(null);
    await provider.close();
  }
}
