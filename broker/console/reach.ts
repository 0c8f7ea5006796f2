/**
 * What an extension can reach, at a glance, for the console's list: its egress
 * rules in canonical form (as approved when an approval is in force, else as
 * requested), then counts of what else it adds. The review says it in full.
 */
import { describeRule } from "../egress/describe-rule.js";
import { requestedGrants, type Grants } from "../registry/grants.js";
import type { Approval, Installed, InstallStatus } from "../registry/registry.js";

export interface ReachSummary {
  /** Each rule's canonical form (the rule as written when it does not parse). */
  readonly net: readonly string[];
  /** "granted" when these are an approval's grants, else "requested". */
  readonly as: "granted" | "requested";
  /** The other things it adds, counted ("2 tools", "1 hook: tool_call", "a database"). */
  readonly adds: readonly string[];
}

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function reachSummary(installed: Installed, status: InstallStatus, approval: Approval | null): ReachSummary {
  const granted = status === "approved" && approval !== null;
  const g: Grants = granted ? approval.grants : requestedGrants(installed.manifest);
  const adds: string[] = [];
  if (g.tools.length > 0) adds.push(count(g.tools.length, "tool"));
  if (g.hooks.length > 0) adds.push(`${count(g.hooks.length, "hook")}: ${g.hooks.join(", ")}`);
  if (g.commands.length > 0) adds.push(count(g.commands.length, "command"));
  if (g.secrets.length > 0)
    adds.push(`${count(g.secrets.length, "secret")}: ${g.secrets.map((s) => s.name).join(", ")}`);
  if (g.storage !== null) adds.push("a database");
  if (g.providers.length > 0) adds.push(count(g.providers.length, "model provider"));
  if (g.services.length > 0) adds.push(count(g.services.length, "HTTP service"));
  const session = g.contexts.length + g.routes.length + g.compactions.length + g.observe.length + (g.managed ? 1 : 0);
  if (session > 0) adds.push(count(session, "session contribution"));
  return {
    net: g.net.map((rule) => describeRule(rule).canonical ?? rule),
    as: granted ? "granted" : "requested",
    adds,
  };
}
