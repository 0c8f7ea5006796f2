/**
 * `net.fetch` as a sequence of acts, one per hop (pipeline.ts): each hop is
 * judged against the policy as it stands when it is sent, shown to the hooks
 * as judged, sent, and audited; a redirect starts the next act. While a hop is
 * on the wire it is registered with the broker's in-flight work, so a policy
 * change (revocation, narrowing, offline, operator deny) cuts it off.
 */
import * as v from "valibot";
import { classifyAddress } from "../egress/address.js";
import { Exchange } from "../egress/exchange.js";
import { judge, type Resolver, type Verdict } from "../egress/judge.js";
import { guardRequest } from "../egress/method-guard.js";
import { sendHop } from "../egress/send.js";
import { urlWithoutValues } from "../egress/url-without-values.js";
import { WireCode } from "../base/errors.js";
import type { CapReply } from "../base/capability.js";
import { decodeBase64, requestBodyBound } from "./base64.js";
import type { CallScope, CapCallRequest } from "./context.js";
import { composeEgressPolicy } from "./egress-policy.js";
import { linkedSignal } from "./linked-signal.js";
import { fetchSecret, sentHop, type FetchSecret, type SentHop } from "./net-secret.js";
import { acquireAll } from "./permits.js";
import { refusal, runAct, type Act, type Performed, type Refusal } from "./pipeline.js";
import type { OperatorPolicy } from "./policy.js";

export const NetFetchArgs = v.object({
  url: v.pipe(v.string(), v.maxLength(8192)),
  method: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/)), "GET"),
  headers: v.optional(
    v.pipe(
      v.array(v.tuple([v.pipe(v.string(), v.maxLength(256)), v.pipe(v.string(), v.maxLength(8192))])),
      v.maxLength(100),
    ),
    [],
  ),
  // Bounded in length before the schema runs (dispatcher.ts) and decoded by a linear pass, not a pattern.
  body: v.optional(v.nullable(v.string()), null),
  /** A secret of the extension's to inject (docs/secrets.md), by name: the extension never holds its value. */
  secret: v.optional(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,63}$/))),
});
type NetFetchArgs = v.InferOutput<typeof NetFetchArgs>;

type Allowed = Verdict & { allowed: true };
interface JudgedHop {
  readonly operator: OperatorPolicy;
  readonly verdict: Allowed;
}

/** The operator policy now, or the refusal of all egress while it cannot be read. */
function operatorNow(scope: CallScope, target: string): OperatorPolicy | Refusal {
  const operator = scope.env.operator.current();
  if (operator instanceof Error)
    return refusal(
      WireCode.denied,
      "operator:policy-invalid",
      `The operator policy cannot be read, so all egress is refused: ${operator.message}`,
      target,
    );
  return operator;
}

/** A resolver that answers what the hop was judged with: a re-judgement never looks the name up again. */
function pinnedResolver(verdict: Allowed): Resolver {
  const answers = verdict.addresses.map((a) => ({ address: a.address, family: a.family }));
  return async () => answers;
}

/** What the hooks see of a judged hop. */
function shownRequest(exchange: Exchange, verdict: Allowed): CapCallRequest {
  const t = verdict.target;
  const addresses = verdict.addresses.map((judged) => {
    const embedded = classifyAddress(judged.address).embedded;
    return {
      address: judged.address,
      class: judged.class,
      ...(embedded !== undefined ? { ipv4: embedded.address } : {}),
    };
  });
  const host = t.name ?? addresses[0]!.address;
  return {
    method: t.method,
    scheme: t.scheme,
    host,
    port: t.port,
    path: exchange.url.pathname,
    rule: verdict.rule,
    addresses,
  };
}

function hopAct(scope: CallScope, exchange: Exchange, secret: FetchSecret | null): Act<JudgedHop> {
  const { env, ctx, info } = scope;
  const url = exchange.url.href;
  // What the audit keeps and hooks are shown: no credentials, no query values (docs/secrets.md).
  const target = urlWithoutValues(url);
  return {
    async judge() {
      const operator = operatorNow(scope, target);
      if ("refused" in operator) return operator;
      if (exchange.redirects > operator.maxRedirects)
        return refusal(
          WireCode.denied,
          "limit:redirects",
          `net.fetch refused: more than ${operator.maxRedirects} redirects`,
          target,
        );
      const verdict = await judge(exchange.url, exchange.method, composeEgressPolicy(scope, operator), env.resolve);
      if (!verdict.allowed)
        return refusal(WireCode.denied, verdict.rule, `net.fetch refused: ${verdict.reason}`, target);
      return { operator, verdict };
    },
    shown: ({ verdict }) => ({ target, request: shownRequest(exchange, verdict) }),
    async perform({ operator, verdict }): Promise<Performed> {
      const remaining = ctx.deadlineAt - Date.now();
      if (remaining <= 0)
        return denied(
          "limit:deadline",
          "net.fetch refused: the invocation's deadline passed before the request was sent",
          target,
        );
      // Judged and hooked without it: the secret goes in now, only under a rule it is bound to.
      let sent: SentHop = { url: exchange.url, headers: exchange.headers, carried: false };
      if (secret !== null) {
        const hop = await sentHop(scope, secret, exchange, verdict.rule);
        if ("rule" in hop) return denied(hop.rule, hop.msg, target);
        sent = hop;
      }
      // The audit row names the secret a hop carried; nothing that comes back holds its value.
      const carried = sent.carried ? { secret: secret!.binding.name } : {};
      const clean = (text: string) => (secret === null ? text : secret.redactor.text(text));
      // Waiting for a permit ends with the deadline, the invocation, or the broker.
      const waiting = linkedSignal([ctx.signal, env.work.signal], remaining);
      const permits = await acquireAll([scope.fetches, ...env.fetchBounds(info.extension)], waiting.signal);
      if ("waitingOn" in permits) {
        waiting.dispose();
        const bound = permits.waitingOn;
        return denied(
          bound.rule,
          `net.fetch refused: ${bound.limit} fetches were already in flight (${bound.rule}) and none ended ` +
            `before the invocation's deadline`,
          target,
        );
      }
      // The request: the same, and a policy change while it is on the wire.
      let withdrawn: { rule: string; reason: string } | null = null;
      const release = env.work.hold({
        extension: info.extension,
        sessionId: ctx.sessionId,
        recheck: async () => {
          const now = operatorNow(scope, target);
          if ("refused" in now) return { rule: now.refused.rule, reason: now.refused.msg };
          const again = await judge(
            exchange.url,
            exchange.method,
            composeEgressPolicy(scope, now),
            pinnedResolver(verdict),
          );
          return again.allowed ? null : { rule: again.rule, reason: again.reason };
        },
        withdraw: (why) => {
          withdrawn = why;
          waiting.abort(new Error(`the policy changed: ${why.reason}`));
        },
      });
      let result;
      try {
        result = await sendHop(
          info.extension,
          { url: sent.url, method: exchange.method, headers: sent.headers, body: exchange.body },
          verdict,
          env.agents,
          operator.maxBodyBytes,
          waiting.signal,
        );
      } finally {
        release();
        permits.release();
        waiting.dispose();
      }
      const cut = withdrawn as { rule: string; reason: string } | null;
      if (cut !== null)
        return {
          ...denied(
            `withdrawn:${cut.rule}`,
            `net.fetch stopped mid-request: the policy changed (${cut.reason})`,
            target,
          ),
          ...carried,
        };
      if (result.kind === "redirect") {
        // A Location echoing the secret would put it in the next hop's URL, its audit row and the reply.
        const error = exchange.follow(clean(result.location), result.status);
        if (error !== null) return { ...denied("url", `net.fetch refused: ${error.error}`, target), ...carried };
        return { reply: { ok: true }, decision: "allowed", rule: verdict.rule, target, next: true, ...carried };
      }
      if (result.kind === "failed") {
        if (result.limit === "body")
          return { ...denied("limit:body", `net.fetch refused: ${clean(result.failure)}`, target), ...carried };
        // Allowed by policy, but the target could not be reached.
        return {
          reply: {
            ok: false,
            error: { code: WireCode.unreachable, msg: `net.fetch failed: ${clean(result.failure)}` },
          },
          decision: "allowed",
          rule: verdict.rule,
          target,
          ...carried,
        };
      }
      const r = result.response;
      const headers = secret === null ? r.headers : r.headers.map(([n, v]): [string, string] => [clean(n), clean(v)]);
      const body = secret === null ? r.body : secret.redactor.bytes(r.body);
      // The URL that answered as the extension wrote it (a query secret is not in it).
      return {
        reply: { ok: true, value: { status: r.status, headers, body, url } },
        decision: "allowed",
        rule: verdict.rule,
        target,
        bytes: body.length,
        ...carried,
      };
    },
  };
}

function denied(rule: string, msg: string, target: string): Performed {
  return {
    reply: { ok: false, error: { code: WireCode.denied, msg: `${msg} (rule: ${rule})` } },
    decision: "denied",
    rule,
    target,
  };
}

export async function netFetch(scope: CallScope, args: NetFetchArgs): Promise<CapReply> {
  let body: Uint8Array | null = null;
  if (args.body !== null) {
    const operator = operatorNow(scope, urlWithoutValues(args.url));
    if ("refused" in operator)
      return scope.refuse(operator.refused.code, operator.refused.rule, operator.refused.msg, operator.refused.target);
    if (args.body.length > requestBodyBound(operator.maxRequestBytes)) {
      return scope.refuse(
        WireCode.denied,
        "limit:request-body",
        `net.fetch refused: the request body is over ${operator.maxRequestBytes} bytes`,
        urlWithoutValues(args.url),
      );
    }
    body = decodeBase64(args.body);
    if (body === null)
      return scope.refuse(
        WireCode.badArguments,
        "args",
        "net.fetch takes {url, method?, headers?, body? (base64)}: the body is not base64",
        urlWithoutValues(args.url),
      );
    // The length check above is exact to within two bytes; this one is exact.
    if (body.length > operator.maxRequestBytes)
      return scope.refuse(
        WireCode.denied,
        "limit:request-body",
        `net.fetch refused: the request body is over ${operator.maxRequestBytes} bytes`,
        urlWithoutValues(args.url),
      );
  }
  const exchange = Exchange.start({ url: args.url, method: args.method, headers: args.headers, body });
  if ("error" in exchange)
    return scope.refuse(WireCode.denied, "url", `net.fetch refused: ${exchange.error}`, urlWithoutValues(args.url));
  // What no rule can vouch for, whatever the hop: override headers, bodies on bodiless methods, CONNECT.
  const unsafe = guardRequest({ url: exchange.url, method: args.method, headers: args.headers, body });
  if (unsafe !== null)
    return scope.refuse(
      WireCode.denied,
      unsafe.rule,
      `net.fetch refused: ${unsafe.reason}`,
      urlWithoutValues(exchange.url.href),
    );
  let secret: FetchSecret | null = null;
  if (args.secret !== undefined) {
    const named = fetchSecret(scope, args.secret, args.headers, exchange.url);
    if ("rule" in named)
      return scope.refuse(WireCode.denied, named.rule, named.msg, urlWithoutValues(exchange.url.href));
    secret = named;
  }
  for (;;) {
    const { reply, next } = await runAct(scope, hopAct(scope, exchange, secret));
    if (!next) return reply;
  }
}
