/**
 * The capability pipeline, one small stage per file:
 *   token        broker/satellite/process.ts (before anything here)
 *   → arguments  each capability's schema, checked here
 *   → policy     egress-policy.ts (approval ∩ operator ∩ session), kv quota, rates
 *   → hooks      hook-stage.ts (the `cap_call` event)
 *   → audit      audit-stage.ts (one row per decision, allowed or denied, with the rule)
 *   → perform    net-fetch.ts, kv.ts, log.ts, report.ts
 * Nothing is cached in the satellite: approvals, operator and session policy
 * are read for every call.
 */
import * as v from "valibot";
import { WireCode } from "../errors.js";
import type { CapReply } from "../satellite/process.js";
import type { CapDispatcher } from "../satellite/slot.js";
import { scopeFor } from "./audit-stage.js";
import { RefusalAudit } from "./refusal-audit.js";
import type { CallScope, CapContext, CapEnvironment } from "./context.js";
import { KvGetArgs, KvListArgs, KvPutArgs, kvListHandler, kvPutHandler, kvReadHandler } from "./kv.js";
import { LogArgs, logHandler } from "./log.js";
import { NetFetchArgs, netFetchHandler } from "./net-fetch.js";
import { ReportArgs, reportHandler } from "./report.js";

export { noHooks, type CapCallEvent, type CapContext, type CapEnvironment, type CapHookStage } from "./context.js";

/** The arguments stage, then the capability's own stages: one runner per capability. */
type Runner = (scope: CallScope, raw: unknown) => Promise<CapReply>;

function capability<S extends v.GenericSchema>(schema: S, usage: string, run: (scope: CallScope, args: v.InferOutput<S>) => Promise<CapReply>): Runner {
  return async (scope, raw) => {
    const args = v.safeParse(schema, raw);
    if (!args.success) return scope.refuse(WireCode.badArguments, "args", usage);
    return run(scope, args.output);
  };
}

/** Builds the dispatcher for one invocation (rates are per invocation). */
export function capDispatcher(env: CapEnvironment, ctx: CapContext): CapDispatcher {
  const table: Record<string, Runner> = {
    "report.emit": capability(ReportArgs, "report.emit takes {text}", reportHandler()),
    log: capability(LogArgs, "log takes {level, msg}", logHandler()),
    "kv.get": capability(KvGetArgs, "kv.get takes {key}", kvReadHandler),
    "kv.delete": capability(KvGetArgs, "kv.delete takes {key}", kvReadHandler),
    "kv.list": capability(KvListArgs, "kv.list takes {prefix?, limit?}", kvListHandler),
    "kv.put": capability(KvPutArgs, "kv.put takes {key, json} or {key, bytes (base64)}", kvPutHandler),
    "net.fetch": capability(NetFetchArgs, "net.fetch takes {url, method?, headers?, body? (base64)}", netFetchHandler),
  };
  const refusals = new RefusalAudit((row) => env.ledger.audit(row));
  return async (call, info) => {
    const scope = scopeFor(env, ctx, call, info, refusals);
    const run = Object.hasOwn(table, call.cap) ? table[call.cap] : undefined;
    if (run === undefined) return scope.refuse(WireCode.denied, "unknown-capability", `There is no capability '${call.cap.slice(0, 64)}'`);
    return run(scope, call.args);
  };
}
