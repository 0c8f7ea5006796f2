/**
 * A broker process killed with SIGKILL mid-work (tests/integration/start-journal.test.ts):
 * its ledger holds one call in each state a start can be in when the process
 * dies, it says which id is in which state on stdout, then it kills itself
 * (no handler runs, no flush, no close).
 *
 *   node --import tsx crashing-ledger.ts <home> <states, comma-separated> [real]
 *
 * With `real`, the last state is a real jailed call in flight (manifests/echo's
 * `count`, once it has reported), made through the library on a broker opened on <home>.
 */
import { writeSync } from "node:fs";
import { join } from "node:path";
import { Broker } from "../../../broker/broker.js";
import { createLogger } from "../../../broker/base/log.js";
import { Preferences } from "../../../broker/sessions/preferences.js";
import { Session } from "../../../broker/sessions/session.js";
import { Ledger } from "../../../broker/store/ledger.js";
import { openStore } from "../../../broker/store/open.js";
import { envBundleCache } from "../../support/env-options.js";
import { REPO } from "../../support/satellites.js";
import type { StartState } from "./start-states.js";

const [home, list, real] = process.argv.slice(2) as [string, string, string | undefined];
const states = list.split(",") as StartState[];
const ids: Record<string, number> = {};

if (real === "real") {
  const broker = Broker.open({ ...envBundleCache(), home, log: createLogger({ level: "error" }) });
  const { installed } = await broker.registry.install(join(REPO, "manifests/echo"));
  broker.registry.approve(installed.manifest.name);
  new Preferences(broker.store).setGlobal(installed.manifest.name, true);
  const session = await Session.open(broker, { id: "s-crash", workspace: home });
  const done = await session.callTool("echo", '{"text":"hi"}');
  if (done.outcome.ok !== true) throw new Error(`echo failed: ${JSON.stringify(done.outcome)}`);
  broker.ledger.flush();
  ids.done = done.invocationId!;
  // Killed once the satellite has the call (count's first report; it reports 100 times, a
  // millisecond apart), not merely once the broker began it; in that very callback, so the
  // call cannot have finished first.
  void session.callTool("count", '{"n":100}', {
    onInvocation: (id) => (ids.inFlight = id),
    onReport: () => {
      writeSync(1, `${JSON.stringify(ids)}\n`);
      process.kill(process.pid, "SIGKILL");
    },
  });
} else {
  const store = openStore(join(home, "tether.db"));
  const ledger = new Ledger(store);
  const begin = (state: StartState): number =>
    (ids[state] = ledger.begin({ sessionId: "s", extension: "e", kind: "tool", name: state, strand: "" }));
  // Committed in the first batch.
  for (const state of states)
    if (state === "running" || state === "running-finish-unwritten" || state === "done") begin(state);
  if (ids.done !== undefined) ledger.finish(ids.done, "ok");
  ledger.flush();
  // After the last batch: only in the journal (and the process's queues).
  if (ids["running-finish-unwritten"] !== undefined) ledger.finish(ids["running-finish-unwritten"], "ok");
  for (const state of states) if (state === "journaled" || state === "finished-unwritten") begin(state);
  // What a satellite connection does before the frames of these calls leave.
  ledger.writeStarts();
  if (ids["finished-unwritten"] !== undefined) ledger.finish(ids["finished-unwritten"], "ok");
}
if (real !== "real") process.stdout.write(`${JSON.stringify(ids)}\n`, () => process.kill(process.pid, "SIGKILL"));
setInterval(() => {}, 60_000);
