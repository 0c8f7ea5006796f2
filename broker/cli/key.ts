/**
 * `tether key`: the operator keys a fleet's approvals are signed with
 * (docs/fleet.md#operator-keys). Keys live in the home, never in the fleet's
 * database; `create` and `rotate` print the line every other host runs to
 * trust the new key.
 */
import type { Broker } from "../broker.js";
import {
  createSigningKey,
  signingKey,
  trustKey,
  trustedKeys,
  untrustKey,
  OperatorKeyError,
} from "../fleet-trust/operator-keys.js";
import { UsageError } from "./command.js";

export interface KeyShown {
  readonly value: unknown;
  readonly text: string;
}

const trustLine = (key: string, label: string): string => `tether key trust ${key}${label !== "" ? ` ${label}` : ""}`;

/** Runs `tether key <verb> …` on `broker`'s home. */
export async function runKey(broker: Broker, args: readonly string[], label: string | undefined): Promise<KeyShown> {
  const [verb, ...rest] = args;
  const home = broker.home;
  const named = label ?? broker.registry.operator;
  try {
    switch (verb) {
      case "create": {
        const { created } = createSigningKey(home, named);
        return {
          value: { id: created.id, key: created.key },
          text:
            `created this home's operator key ${created.id} (${home}/operator.key, mode 0600), ` +
            `trusted here.\nOn every other host of the fleet, run:\n  ${trustLine(created.key, named)}`,
        };
      }
      case "list": {
        const own = signingKey(home);
        const keys = trustedKeys(home);
        const lines = keys.map(
          (k) =>
            `${k.id}  ${k.key}${k.label !== "" ? `  ${k.label}` : ""}` +
            (own?.id === k.id ? "  (this home signs with it)" : ""),
        );
        return {
          value: {
            signing: own === null ? null : { id: own.id, key: own.key },
            trusted: keys.map((k) => ({ id: k.id, key: k.key, label: k.label })),
          },
          text: [
            own === null ? "this home has no operator key (tether key create)" : `this home signs with ${own.id}`,
            keys.length === 0 ? "it trusts no key: approvals from the fleet are refused here" : "trusted:",
            ...lines,
          ].join("\n"),
        };
      }
      case "trust": {
        if (rest.length < 1 || rest.length > 2) throw new UsageError("tether key trust <ed25519:…> [label]");
        const k = trustKey(home, rest[0]!, rest[1] ?? "");
        return {
          value: { id: k.id, key: k.key, label: k.label },
          text: `this host now accepts approvals signed by ${k.id}${k.label !== "" ? ` (${k.label})` : ""}`,
        };
      }
      case "untrust": {
        if (rest.length !== 1) throw new UsageError("tether key untrust <ed25519:… or key id>");
        const removed = untrustKey(home, rest[0]!);
        return {
          value: { removed },
          text: removed
            ? `this host no longer accepts approvals signed by ${rest[0]}: ` +
              `those not signed again are refused at the next pull`
            : `${rest[0]} was not trusted here`,
        };
      }
      case "rotate": {
        const { created, replaced } = createSigningKey(home, named, { replace: true });
        const { FleetMember } = await import("../fleet.js");
        const member = broker.fleet instanceof FleetMember ? broker.fleet : null;
        const resigned = member === null ? null : await member.resign();
        const text = [
          `this home signs with a new key ${created.id}` +
            (replaced !== null
              ? ` (the old one, ${replaced.id}, is kept as operator.key.${replaced.id} and still trusted here)`
              : "") +
            ".",
          resigned === null
            ? "No fleet store was given: approvals already published keep " +
              "their old signatures (run again with --store to sign them anew)."
            : `Signed again with it: ${resigned} approval(s) in force.`,
          "On every host, run:",
          `  ${trustLine(created.key, named)}`,
          ...(replaced !== null ? ["and once every host trusts it:", `  tether key untrust ${replaced.id}`] : []),
        ].join("\n");
        return { value: { id: created.id, key: created.key, replaced: replaced?.id ?? null, resigned }, text };
      }
      default:
        throw new UsageError("what to do: tether key create | list | trust <key> [label] | untrust <key> | rotate");
    }
  } catch (err) {
    if (err instanceof OperatorKeyError) throw new UsageError(err.message);
    throw err;
  }
}
