/**
 * The capability pipeline, one small stage each:
 *   token (broker/satellite/process.ts, before anything here)
 *   → arguments (the capability's schema)
 *   → policy (egress rules composed at dispatch; quotas; rates)
 *   → hooks (the `cap_call` stage: a seam until the hook bus arrives)
 *   → audit (one row per decision, allowed or denied, with the rule)
 *   → perform.
 * Nothing is cached in the satellite: approvals, operator and session policy
 * are read for every call.
 */
import * as v from "valibot";
import { brokeredFetch } from "../egress/fetch.js";
import type { EgressPolicy, Resolver } from "../egress/judge.js";
import { parseRule, type EgressRule } from "../egress/rules.js";
import { WireCode } from "../errors.js";
import type { Logger } from "../log.js";
import type { Grants } from "../registry/grants.js";
import type { CapReply } from "../satellite/process.js";
import type { CapCall, CapDispatcher, InvocationInfo } from "../satellite/slot.js";
import type { Ledger } from "../store/ledger.js";
import type { Store } from "../store/open.js";
import { KvGetArgs, KvListArgs, KvPutArgs, kvDelete, kvGet, kvList, kvPut } from "./kv.js";
import type { OperatorPolicySource, SessionPolicy } from "./policy.js";

/** What the `cap_call` hook stage is shown. */
export interface CapCallEvent {
  readonly extension: string;
  readonly capability: string;
  readonly target: string;
  /** The invocation this call was made within, e.g. "tool:fetch_weather". */
  readonly within: string;
  readonly args: unknown;
}

/** The hook stage: a block refuses the call with the hook's reason. */
export type CapHookStage = (event: CapCallEvent) => Promise<{ block: string; by: string } | null>;

export const noHooks: CapHookStage = async () => null;

export interface CapEnvironment {
  readonly store: Store;
  readonly ledger: Ledger;
  readonly log: Logger;
  readonly operator: OperatorPolicySource;
  readonly resolve: Resolver;
  readonly hooks: CapHookStage;
}

/** Everything about the invocation a call comes from, read at dispatch. */
export interface CapContext {
  readonly sessionId: string;
  readonly invocationId: number | null;
  readonly deadlineAt: number;
  /** The approval's grants now (a revocation or narrowing shows on the next call). */
  readonly grants: () => Grants;
  readonly session: () => SessionPolicy;
}

const NetFetchArgs = v.object({
  url: v.pipe(v.string(), v.maxLength(8192)),
  method: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/)), "GET"),
  headers: v.optional(v.pipe(v.array(v.tuple([v.pipe(v.string(), v.maxLength(256)), v.pipe(v.string(), v.maxLength(8192))])), v.maxLength(100)), []),
  body: v.optional(v.nullable(v.pipe(v.string(), v.base64())), null),
});
const TextArgs = v.object({ text: v.pipe(v.string(), v.maxLength(65_536)) });
const LogArgs = v.object({ level: v.optional(v.picklist(["debug", "info", "warn", "error"]), "info"), msg: v.pipe(v.string(), v.maxLength(65_536)) });

const REPORTS_PER_SECOND = 50;
const LOGS_PER_SECOND = 20;
const MAX_TEXT = 4096;

/** A token bucket per invocation: best-effort capabilities drop past their rate. */
class Rate {
  #tokens: number;
  #last = Date.now();
  dropped = 0;
  constructor(readonly perSecond: number) {
    this.#tokens = perSecond;
  }
  take(): boolean {
    const now = Date.now();
    this.#tokens = Math.min(this.perSecond, this.#tokens + ((now - this.#last) / 1000) * this.perSecond);
    this.#last = now;
    if (this.#tokens < 1) {
      this.dropped++;
      return false;
    }
    this.#tokens -= 1;
    return true;
  }
}

// Parsed rules by their text: a rule's meaning never changes, and parsing is not free (IDN, public suffixes).
const parsedRules = new Map<string, EgressRule | null>();

function rulesOf(texts: readonly string[]): EgressRule[] {
  // Approved rules were validated at install; one that no longer parses allows nothing.
  const out: EgressRule[] = [];
  for (const text of texts) {
    let rule = parsedRules.get(text);
    if (rule === undefined) {
      try {
        rule = parseRule(text);
      } catch {
        rule = null;
      }
      if (parsedRules.size > 10_000) parsedRules.clear();
      parsedRules.set(text, rule);
    }
    if (rule !== null) out.push(rule);
  }
  return out;
}

/** Builds the dispatcher for one invocation. */
export function capDispatcher(env: CapEnvironment, ctx: CapContext): CapDispatcher {
  const reports = new Rate(REPORTS_PER_SECOND);
  const logs = new Rate(LOGS_PER_SECOND);

  return async (call: CapCall, info: InvocationInfo): Promise<CapReply> => {
    const audit = (decision: "allowed" | "denied", rule: string, target = "", bytes = 0) =>
      env.ledger.audit({ invocationId: ctx.invocationId, sessionId: ctx.sessionId, extension: info.extension, capability: call.cap, target, decision, rule, bytes });
    const refuse = (code: string, rule: string, msg: string, target = ""): CapReply => {
      audit("denied", rule, target);
      return { ok: false, error: { code, msg: `${msg} (rule: ${rule})` } };
    };
    const hooked = async (target: string): Promise<CapReply | null> => {
      const verdict = await env.hooks({ extension: info.extension, capability: call.cap, target, within: `${info.kind}:${info.name}`, args: call.args });
      return verdict === null ? null : refuse(WireCode.denied, `hook:${verdict.by}`, `Blocked by a hook: ${verdict.block}`, target);
    };

    switch (call.cap) {
      case "report.emit": {
        const args = v.safeParse(TextArgs, call.args);
        if (!args.success) return refuse(WireCode.badArguments, "args", "report.emit takes {text}");
        if (!reports.take()) return { ok: false, error: { code: WireCode.denied, msg: `report.emit: more than ${REPORTS_PER_SECOND} partials a second; this one was dropped (rule: rate:report)` } };
        info.report(args.output.text.slice(0, MAX_TEXT));
        audit("allowed", "builtin:report", "", args.output.text.length);
        return { ok: true };
      }
      case "log": {
        const args = v.safeParse(LogArgs, call.args);
        if (!args.success) return refuse(WireCode.badArguments, "args", "log takes {level, msg}");
        if (!logs.take()) return { ok: false, error: { code: WireCode.denied, msg: `log: more than ${LOGS_PER_SECOND} lines a second; dropped (rule: rate:log)` } };
        // Control characters escaped: an extension cannot forge a broker log line.
        const line = args.output.msg.slice(0, MAX_TEXT).replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
        env.log[args.output.level](`[${info.extension}] ${line}`, { extension: info.extension, session: ctx.sessionId });
        audit("allowed", "builtin:log", "", args.output.msg.length);
        return { ok: true };
      }
      case "kv.get":
      case "kv.delete": {
        const args = v.safeParse(KvGetArgs, call.args);
        if (!args.success) return refuse(WireCode.badArguments, "args", `${call.cap} takes {key}`);
        const blocked = await hooked(args.output.key);
        if (blocked) return blocked;
        const reply = call.cap === "kv.get" ? kvGet(env.store, info.extension, args.output) : kvDelete(env.store, info.extension, args.output);
        audit("allowed", "builtin:kv", args.output.key);
        return reply;
      }
      case "kv.list": {
        const args = v.safeParse(KvListArgs, call.args);
        if (!args.success) return refuse(WireCode.badArguments, "args", "kv.list takes {prefix?, limit?}");
        audit("allowed", "builtin:kv", args.output.prefix);
        return kvList(env.store, info.extension, args.output);
      }
      case "kv.put": {
        const args = v.safeParse(KvPutArgs, call.args);
        if (!args.success) return refuse(WireCode.badArguments, "args", "kv.put takes {key, json} or {key, bytes (base64)}");
        const blocked = await hooked(args.output.key);
        if (blocked) return blocked;
        const { reply, bytes } = kvPut(env.store, info.extension, ctx.grants().limits.kv_bytes, args.output);
        if (!reply.ok) {
          audit("denied", "limits.kv_bytes", args.output.key, bytes);
          return reply;
        }
        audit("allowed", "builtin:kv", args.output.key, bytes);
        return reply;
      }
      case "net.fetch": {
        const args = v.safeParse(NetFetchArgs, call.args);
        if (!args.success) return refuse(WireCode.badArguments, "args", "net.fetch takes {url, method?, headers?, body? (base64)}");
        const operator = env.operator.current();
        if (operator instanceof Error) return refuse(WireCode.denied, "operator:policy-invalid", `The operator policy cannot be read, so all egress is refused: ${operator.message}`, args.output.url);
        const session = ctx.session();
        const policy: EgressPolicy = {
          extension: info.extension,
          approved: rulesOf(ctx.grants().net),
          operatorDeny: operator.deny,
          allowPrivate: operator.allowPrivate,
          offline: session.offline === true,
          sessionAllow: session.allow === undefined ? null : rulesOf(session.allow),
        };
        const blocked = await hooked(args.output.url);
        if (blocked) return blocked;
        const outcome = await brokeredFetch(
          {
            url: args.output.url,
            method: args.output.method,
            headers: args.output.headers,
            body: args.output.body === null ? null : Buffer.from(args.output.body, "base64"),
          },
          policy,
          env.resolve,
          { maxBodyBytes: operator.maxBodyBytes, maxRedirects: operator.maxRedirects, deadlineAt: ctx.deadlineAt },
          {
            // One audit row per hop: refused hops when judged, redirecting hops when answered,
            // the final hop with its bytes below.
            judged: (url, verdict) => {
              if (!verdict.allowed) audit("denied", verdict.rule, url);
            },
            redirected: (url, verdict) => audit("allowed", verdict.rule, url),
            // The hook stage is asked about every hop, not only the first.
            gate: async (url) => {
              const verdict = await env.hooks({ extension: info.extension, capability: call.cap, target: url, within: `${info.kind}:${info.name}`, args: call.args });
              if (verdict === null) return null;
              const rule = `hook:${verdict.by}`;
              audit("denied", rule, url);
              return { rule, reason: `Blocked by a hook: ${verdict.block}` };
            },
          },
        );
        if (outcome.ok) {
          audit("allowed", outcome.verdict.rule, outcome.response.url, outcome.response.body.length);
          return { ok: true, value: { status: outcome.response.status, headers: outcome.response.headers, body: outcome.response.body, url: outcome.response.url } };
        }
        if (outcome.verdict !== undefined) {
          return { ok: false, error: { code: WireCode.denied, msg: `net.fetch refused: ${outcome.verdict.reason} (rule: ${outcome.verdict.rule})` } };
        }
        if (outcome.rule.startsWith("limit:") || outcome.rule === "url") return refuse(WireCode.denied, outcome.rule, `net.fetch refused: ${outcome.failure}`, args.output.url);
        // Allowed by policy, but the target could not be reached.
        audit("allowed", outcome.rule, args.output.url);
        return { ok: false, error: { code: WireCode.unreachable, msg: `net.fetch failed: ${outcome.failure}` } };
      }
      default:
        return refuse(WireCode.denied, "unknown-capability", `There is no capability '${call.cap.slice(0, 64)}'`);
    }
  };
}
