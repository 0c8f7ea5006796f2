/**
 * The dispatcher: finds the capability, runs the arguments stage, and hands
 * the decoded arguments to the capability's acts (pipeline.ts runs each act's
 * judge → hooks → perform → audit). The token was checked before anything
 * here (broker/satellite/process.ts). Nothing is cached in the satellite:
 * approvals, operator and session policy are read for every act.
 */
import * as v from "valibot";
import { WireCode } from "../base/errors.js";
import type { CapReply } from "../base/capability.js";
import type { CapDispatcher } from "../base/capability.js";
import { scopeFor } from "./audit-stage.js";
import type { CallScope, CapContext, CapEnvironment } from "./context.js";
import { DbArgs, dbAct } from "./db.js";
import { KvCasArgs, KvGetArgs, KvListArgs, KvPutArgs, kvUsage } from "../../jail-runtime/wire/kv-args.js";
import { kvDeleteAct, kvGetAct, kvListAct, kvPutAct, type KvFamily } from "./kv.js";
import { kvCasAct } from "./kv-cas.js";
import { LogArgs, logAct } from "./log.js";
import { MODEL_COMPLETE_USAGE, ModelCompleteArgs } from "../../jail-runtime/wire/model-args.js";
import { modelCompleteAct } from "./model-complete.js";
import { NetFetchArgs, netFetch } from "./net-fetch.js";
import { Permits } from "./permits.js";
import { internalError, runAct, type Act } from "./pipeline.js";
import { Rate } from "./rate.js";
import { REPORTS_PER_SECOND, ReportArgs, reportAct } from "./report.js";
import { LOGS_PER_SECOND } from "./log.js";
import { RefusalAudit } from "./refusal-audit.js";
import { actCapabilities } from "./act.js";
import { SEARCHES_PER_SECOND, SearchQueryArgs, searchAct } from "./search.js";

export {
  noHooks,
  type CapCallEvent,
  type CapCallRequest,
  type CapContext,
  type CapEnvironment,
  type CapHookStage,
} from "./context.js";

/** The arguments stage, then the capability: one runner per capability. */
type Runner = (scope: CallScope, raw: unknown) => Promise<CapReply>;

function capability<S extends v.GenericSchema>(
  schema: S,
  usage: string,
  run: (scope: CallScope, args: v.InferOutput<S>) => Promise<CapReply>,
): Runner {
  return async (scope, raw) => {
    const args = v.safeParse(schema, raw);
    if (!args.success) return scope.refuse(WireCode.badArguments, "args", usage);
    return run(scope, args.output);
  };
}

/** A capability that is one act. */
function oneAct<S extends v.GenericSchema>(
  schema: S,
  usage: string,
  act: (scope: CallScope, args: v.InferOutput<S>) => Act<unknown>,
): Runner {
  return capability(schema, usage, async (scope, args) => (await runAct(scope, act(scope, args))).reply);
}

/** `kv.*` (the extension's own keys) or `skv.*` (its keys in the invocation's session). */
function kvCapabilities(family: KvFamily): Record<string, Runner> {
  return {
    [`${family}.get`]: oneAct(KvGetArgs, kvUsage(family).get, kvGetAct(family)),
    [`${family}.delete`]: oneAct(KvGetArgs, kvUsage(family).delete, kvDeleteAct(family)),
    [`${family}.list`]: oneAct(KvListArgs, kvUsage(family).list, kvListAct(family)),
    [`${family}.put`]: oneAct(KvPutArgs, kvUsage(family).put, kvPutAct(family)),
    [`${family}.cas`]: oneAct(KvCasArgs, kvUsage(family).cas, kvCasAct(family)),
  };
}

/**
 * The dispatcher for one invocation (rates and the fetch bound are per
 * invocation), built at its first capability call: most calls make none, and
 * reading the grants and the operator policy costs a store query and a stat.
 */
export function capDispatcher(env: CapEnvironment, ctx: CapContext): CapDispatcher {
  let built: CapDispatcher | null = null;
  return (call, info) => (built ??= buildDispatcher(env, ctx))(call, info);
}

function buildDispatcher(env: CapEnvironment, ctx: CapContext): CapDispatcher {
  const reports = new Rate(REPORTS_PER_SECOND);
  const logs = new Rate(LOGS_PER_SECOND);
  const searches = new Rate(SEARCHES_PER_SECOND);
  const table: Record<string, Runner> = {
    "report.emit": oneAct(ReportArgs, "report.emit takes {text}", (scope, args) => reportAct(scope, args, reports)),
    log: oneAct(LogArgs, "log takes {level, msg}", (scope, args) => logAct(scope, args, logs)),
    ...kvCapabilities("kv"),
    ...kvCapabilities("skv"),
    // Reported acts (`ctx.act`): the session's tool hooks are asked about the extension's own acts.
    ...actCapabilities(),
    "db.query": oneAct(
      DbArgs,
      "db.query takes {sql, params?} (params: an array or a record of null, number, string, boolean or {bytes " +
        "(base64)})",
      dbAct("query"),
    ),
    "db.exec": oneAct(
      DbArgs,
      "db.exec takes {sql, params?} (params: an array or a record of null, number, string, boolean or {bytes " +
        "(base64)})",
      dbAct("exec"),
    ),
    "search.query": oneAct(SearchQueryArgs, "search.query takes {query, options?: {limit?: 1-100}}", (scope, args) =>
      searchAct(scope, args, searches),
    ),
    "model.complete": oneAct(ModelCompleteArgs, MODEL_COMPLETE_USAGE, modelCompleteAct),
    "net.fetch": capability(
      NetFetchArgs,
      "net.fetch takes {url, method?, headers?, body? (base64), secret?}",
      netFetch,
    ),
  };
  const refusals = new RefusalAudit((row) => env.ledger.audit(row));
  // The manifest's bound, under the operator's ceiling (a policy that cannot be read allows no egress anyway).
  const operator = env.operator.current();
  const ceiling = operator instanceof Error ? ctx.grants().limits.fetches : operator.maxFetches;
  const fetches = new Permits(Math.min(ctx.grants().limits.fetches, ceiling), "limits.fetches");
  return (call, info) => {
    const scope = scopeFor(env, ctx, call, info, refusals, fetches);
    const run = Object.hasOwn(table, call.cap) ? table[call.cap] : undefined;
    if (run === undefined)
      return Promise.resolve(
        scope.refuse(WireCode.denied, "unknown-capability", `There is no capability '${call.cap.slice(0, 64)}'`),
      );
    // Counted until it settles (close waits for it); any throw is one audited internal error.
    return env.work.track(run(scope, call.args).catch((err: unknown) => internalError(scope, err)));
  };
}
