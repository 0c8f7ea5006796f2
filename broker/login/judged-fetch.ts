/**
 * Every request a sign-in makes for an extension (token, device
 * authorization, revocation) goes through the egress judge as `net.fetch`
 * does: the operator's policy in force (its deny rules, which non-public
 * addresses may be reached), the name resolved once and the connection made
 * to the judged address, and one audit row each (`login.request`, the
 * endpoint without query values). The only rule it may use is the endpoint's
 * own URL, exactly: what the manifest names and the operator approved.
 */
import type { fetch as undiciFetch } from "undici";
import { undici } from "../egress/undici.js";
import { pinnedLookup } from "../egress/agents.js";
import { judge, type Resolver } from "../egress/judge.js";
import { parseRule } from "../egress/rules.js";
import { urlWithoutValues } from "../egress/url-without-values.js";
import type { OperatorPolicySource } from "../caps/policy.js";
import type { AuditRow } from "../store/ledger.js";

export interface JudgedFetchOptions {
  readonly extension: string;
  readonly operator: OperatorPolicySource;
  readonly resolve: Resolver;
  readonly audit: (row: AuditRow) => void;
}

/** A sign-in's request refused before it was sent. */
export class SignInRefused extends Error {
  constructor(
    readonly rule: string,
    reason: string,
  ) {
    super(`refused by the operator's policy (${rule}): ${reason}`);
  }
}

/** A `fetch` for one extension's sign-in requests, judged and audited. */
export function judgedFetch(options: JudgedFetchOptions): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    const method = init?.method ?? "GET";
    const target = urlWithoutValues(url.href);
    const audit = (decision: "allowed" | "denied", rule: string) =>
      options.audit({
        invocationId: null,
        sessionId: "@login",
        extension: options.extension,
        capability: "login.request",
        target,
        decision,
        rule,
        bytes: 0,
      });
    const operator = options.operator.current();
    if (operator instanceof Error) {
      audit("denied", "operator:policy-invalid");
      throw new SignInRefused("operator:policy-invalid", `the operator policy cannot be read: ${operator.message}`);
    }
    // The endpoint, exactly as the manifest names it, is the one rule.
    const exact = `${url.protocol}//${url.host}${url.pathname}`;
    const verdict = await judge(
      url,
      method,
      {
        extension: options.extension,
        approved: [parseRule(exact)],
        operatorDeny: operator.deny,
        reach: operator.reach,
        offline: false,
        sessionAllow: null,
      },
      options.resolve,
    );
    if (!verdict.allowed) {
      audit("denied", verdict.rule);
      throw new SignInRefused(verdict.rule, verdict.reason);
    }
    const pinned = verdict.addresses[0]!;
    const { Agent, fetch: fetchWith } = await undici();
    const agent = new Agent({ connect: { lookup: pinnedLookup(pinned.address, pinned.family) } });
    audit("allowed", verdict.rule);
    try {
      const res = await fetchWith(url, { ...(init as object), dispatcher: agent } as Parameters<typeof undiciFetch>[1]);
      // The body is read by the caller; the agent closes once it is.
      return res as unknown as Response;
    } finally {
      void agent.close();
    }
  }) as typeof fetch;
}
