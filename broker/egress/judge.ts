/**
 * The egress decision for one request hop, composed at dispatch:
 * the manifest's rules as approved ∩ the operator's policy ∩ the session's
 * policy — then every resolved address judged. Pure but for the resolver.
 */
import type { AddressClass } from "./address-classes.js";
import { classifyAddress } from "./address.js";
import { parseIpLiteral } from "./ip-literal.js";
import { approvedRule, literalRefusal, sameKind, targetOf, where } from "./manifest-layer.js";
import { denyCoversUnsafePath } from "./path-refusal.js";
import { reachRefusal, type Reach } from "./reach.js";
import { deniesAddress, matchesUrl, namesAddress, type EgressRule, type Target } from "./rules.js";

export { targetOf } from "./manifest-layer.js";

export interface EgressPolicy {
  /** Whose rules these are, for messages. */
  readonly extension: string;
  /** The manifest's `[net] allow` as the operator approved it. */
  readonly approved: readonly EgressRule[];
  /** Operator policy: rules that are refused whatever an approval says. */
  readonly operatorDeny: readonly EgressRule[];
  /** Operator policy: which non-public addresses a rule naming them may reach. */
  readonly reach: Reach;
  /** Session policy: no egress at all. */
  readonly offline: boolean;
  /** Session policy: a narrower allow list (null = no narrowing). */
  readonly sessionAllow: readonly EgressRule[] | null;
}

/** Resolves a name to every address it has (injected in tests). */
export type Resolver = (name: string) => Promise<ReadonlyArray<{ address: string; family: 4 | 6 }>>;

/** One answer as judged: its canonical text, family and class. */
export interface JudgedAddress {
  readonly address: string;
  readonly family: 4 | 6;
  readonly class: AddressClass;
}

export type Verdict =
  | {
      readonly allowed: true;
      readonly rule: string;
      /** The answer the connection is pinned to (the first). */
      readonly address: string;
      readonly family: 4 | 6;
      readonly target: Target;
      /** Every answer judged (all allowed), with its class, in the resolver's order. */
      readonly addresses: ReadonlyArray<JudgedAddress>;
    }
  | { readonly allowed: false; readonly rule: string; readonly reason: string };

function deny(rule: string, reason: string): Verdict {
  return { allowed: false, rule, reason };
}

/** Judges one hop. `ip` hosts are judged without a lookup; names are resolved once. */
export async function judge(url: URL, method: string, policy: EgressPolicy, resolve: Resolver): Promise<Verdict> {
  const target = targetOf(url, method);
  if ("error" in target) return deny("url", `${target.error} (${url.protocol}//${url.host})`);
  if (policy.offline) return deny("session:offline", "this session is offline: no egress");
  for (const rule of policy.operatorDeny) {
    if (
      (matchesUrl(rule, target) || denyCoversUnsafePath(rule, target)) &&
      (rule.host.kind === "name" || rule.host.kind === "wildcard")
    ) {
      return deny(`operator:deny ${rule.text}`, `the operator's policy denies ${where(url)}`);
    }
  }
  const found = approvedRule(policy.approved, target, url, policy.extension);
  if ("refused" in found) return deny(found.refused.rule, found.refused.reason);
  const approved = found.rule;
  if (
    policy.sessionAllow !== null &&
    !policy.sessionAllow.some((rule) => sameKind(rule, target) && matchesUrl(rule, target))
  ) {
    return deny("session:allow", `the session's allow list does not include ${where(url)}`);
  }

  const literal = target.name === null ? parseIpLiteral(url.hostname) : null;
  let answers: ReadonlyArray<{ address: string; family: 4 | 6 }>;
  if (literal !== null) {
    answers = [{ address: literal, family: literal.includes(":") ? 6 : 4 }];
  } else {
    try {
      answers = await resolve(target.name!);
    } catch (err) {
      return deny("dns", `cannot resolve ${target.name}: ${(err as Error).message}`);
    }
    if (answers.length === 0) return deny("dns", `${target.name} has no addresses`);
  }

  // Every answer is judged: one bad answer refuses the name (a rebinding
  // resolver can mix a public address with an internal one).
  const judged: JudgedAddress[] = [];
  for (const answer of answers) {
    let info;
    try {
      info = classifyAddress(answer.address);
    } catch {
      return deny("dns", `${target.name ?? url.hostname} resolved to a malformed address`);
    }
    const { address, family, class: cls } = info;
    for (const rule of policy.operatorDeny) {
      if (deniesAddress(rule, address))
        return deny(`operator:deny ${rule.text}`, `the operator's policy denies address ${address}`);
    }
    const unnamed = literal === null ? null : literalRefusal(policy.approved, target, address, policy.extension);
    if (unnamed !== null) return deny(unnamed.rule, unnamed.reason);
    if (cls !== "public") {
      // Named by an approved rule, then the operator's switch. Unspecified: never, named or not.
      const named = policy.approved.some((rule) => matchesUrl(rule, target) && namesAddress(rule, address));
      if (cls === "unspecified" || !named) {
        return deny(
          `address:${cls}`,
          `${target.name ?? address} resolves to ${address}, a ${describe(cls)} ` +
            `address; only a rule naming that IP or CIDR may reach it`,
        );
      }
      const refused = reachRefusal(policy.reach, address, cls);
      if (refused !== null) return deny(refused.rule, refused.reason);
    }
    judged.push({ address, family, class: cls });
  }
  const first = judged[0]!;
  return {
    allowed: true,
    rule: approved.text,
    address: first.address,
    family: first.family,
    target,
    addresses: judged,
  };
}

function describe(cls: AddressClass): string {
  return cls.replace(/_/g, "-");
}
