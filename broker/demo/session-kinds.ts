/**
 * `make demo`'s session-facing part: a managed extension's preparation, its
 * observer and close over the session's storage, a host route, a compaction
 * strategy's folds — and a failed preparation that takes its dependent down.
 */
import { type InvocationOutcome, textOf } from "../base/outcome.js";
import type { Session } from "../sessions/session.js";

function said(outcome: InvocationOutcome<"tool">): string {
  return textOf(outcome);
}

const oneLine = (text: string) => text.replace(/\n/g, " ⏎ ");

/** A conversation with tool results worth folding: old `ls`/`cat` output, then the recent turn. */
const CONVERSATION = [
  { role: "user", content: "Why does the build fail?" },
  { role: "tool", name: "ls", content: "src/ tests/ package.json tsconfig.json" },
  { role: "tool", name: "cat", content: '{ "scripts": { "build": "tsc -p ." } }' },
  { role: "assistant", content: "The build runs tsc; let me look at the errors." },
  { role: "tool", name: "sh", content: "src/a.ts(3,1): error TS2304: Cannot find name 'x'." },
  { role: "assistant", content: "`x` is not defined in src/a.ts." },
  { role: "user", content: "Fix it." },
  { role: "assistant", content: "Done: declared x." },
];

export async function sessionKindsDemo(session: Session, step: (title: string) => void): Promise<void> {
  step("Session-facing extensions: what each contributes, and a preparation that fails");
  for (const row of session
    .status()
    .filter((r) => ["scratchpad", "fold-results", "tickets", "ticket-digest"].includes(r.name))) {
    const parts = [
      row.managed ? "managed" : "",
      row.observes ? "observes" : "",
      row.routes.length > 0 ? `routes ${row.routes.join(", ")}` : "",
      row.compactions.length > 0 ? `compaction ${row.compactions.join(", ")}` : "",
      row.tools.length > 0 ? `tools ${row.tools.join(", ")}` : "",
    ].filter((p) => p !== "");
    console.log(`  ${row.name}: ${row.state}${row.state === "active" ? ` — ${parts.join("; ")}` : ` — ${row.reason}`}`);
  }
  console.log("  the session's composed context (registry order, with attribution):");
  for (const piece of session.context()) console.log(`    [${piece.extension} ${piece.source}] ${oneLine(piece.text)}`);

  step("A managed scratchpad: notes in memory, flushed to the session's storage after each turn and at close");
  console.log(
    `  jot "check the flaky test" ` +
      `→ ${said((await session.callTool("jot", '{"line":"check the flaky test"}')).outcome)}`,
  );
  console.log(
    `  jot "ask about the release date" ` +
      `→ ${said((await session.callTool("jot", '{"line":"ask about the release date"}')).outcome)}`,
  );
  const summary = async () => {
    const routed = await session.route("scratchpad", "summary", "");
    return routed.outcome.ok
      ? routed.outcome.response
      : `error ${routed.outcome.error.code}: ${routed.outcome.error.msg}`;
  };
  console.log(`  route scratchpad/summary (the harness's side panel) → ${await summary()}`);
  await session.fire("agent_settled", {});
  await session.observers.idle();
  console.log(`  the turn settles; the observer flushed and counted it → ${await summary()}`);
  await session.callTool("jot", '{"line":"written just before a reload"}');
  session.prefer("scratchpad", false);
  const out = await session.reload();
  console.log(`  reload without it → deactivated [${out.deactivated.join(", ")}]: its close flushed what was pending`);
  session.prefer("scratchpad", null);
  await session.reload();
  const pad = session.context().filter((p) => p.extension === "scratchpad" && p.source === "prepare");
  console.log(`  reload with it → prepared again (resumed); what it adds to the context:`);
  for (const piece of pad) console.log(`    ${oneLine(piece.text)}`);

  step("Compaction: a strategy folds old tool results; the folds are stored and can be read back");
  const compacted = await session.compact({ messages: CONVERSATION, reason: "threshold", budget: 400 });
  if (!compacted.outcome.ok)
    console.log(`  compact → error ${compacted.outcome.error.code}: ${compacted.outcome.error.msg}`);
  else {
    console.log(
      `  compact (${CONVERSATION.length} messages, by ${compacted.strategy} ` +
        `of ${compacted.extension}) → ${compacted.outcome.summary}`,
    );
    for (const fold of session.folds(compacted.outcome.compactionId))
      console.log(`    fold messages ${fold.from}–${fold.to}: ${fold.text}`);
  }
}
