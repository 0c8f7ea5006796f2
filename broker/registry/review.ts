/**
 * `tether review`: what an extension can reach, in plain words, and on an
 * upgrade the diff against what was approved, so a widening cannot be missed.
 */
import { describeRule, type RuleDescription } from "../egress/describe-rule.js";
import { describeHook } from "../hooks/hook-subject.js";
import { matchOf } from "../install/hook-row.js";
import type { Approval, Installed, InstallStatus } from "./registry.js";
import { diffGrants, requestedGrants, widens, type GrantDiff, type Grants } from "./grants.js";

export interface Review {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly status: InstallStatus;
  readonly requested: Grants;
  /** Each requested egress rule decoded: canonical URL, and for address rules size and classes. */
  readonly decoded: readonly RuleDescription[];
  readonly approved: Grants | null;
  readonly diff: GrantDiff | null;
  readonly widens: boolean;
}

export function buildReview(installed: Installed, status: InstallStatus, approval: Approval | null): Review {
  const requested = requestedGrants(installed.manifest);
  // A diff only when what is installed is not what was approved (an upgrade).
  const changed = approval !== null && (approval.manifestHash !== installed.manifestHash || approval.artifactHash !== installed.artifactHash);
  const diff = changed ? diffGrants(approval!.grants, requested) : null;
  return {
    name: installed.name,
    version: installed.version,
    description: installed.description,
    status,
    requested,
    decoded: requested.net.map(describeRule),
    approved: approval?.grants ?? null,
    diff,
    widens: diff !== null && widens(diff),
  };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function renderReview(review: Review, installed: Installed): string {
  const lines: string[] = [];
  const r = review.requested;
  lines.push(`${review.name} ${review.version} — ${review.description}`);
  lines.push(`status: ${review.status}`);
  lines.push("");
  lines.push("It can reach:");
  if (r.net.length === 0) lines.push("  the network: nothing (no egress rules)");
  else
    for (const rule of r.net) {
      const tag = review.diff?.addedNet.includes(rule) ? "   [NEW]" : review.approved !== null && review.diff === null && !review.approved.net.includes(rule) ? "   (requested, not granted)" : "";
      lines.push(`  the network: ${rule}${tag}`);
      const decoded = review.decoded.find((d) => d.rule === rule) ?? describeRule(rule);
      lines.push(`      means: ${decoded.canonical === null ? "" : `${decoded.canonical} — `}${decoded.summary}`);
    }
  lines.push("  files, environment, processes: nothing (jailed; only capabilities the broker serves)");
  lines.push("");
  lines.push(`It adds ${plural(r.tools.length, "tool")}:`);
  for (const tool of installed.manifest.tool) lines.push(`  ${tool.name} — ${tool.description}${review.diff?.addedTools.includes(tool.name) ? "   [NEW]" : ""}`);
  // A matcher narrows what the hook is asked about; the approval is still for the whole event.
  const hooks = r.hooks.map((event) => {
    const row = installed.manifest.hook.find((h) => h.event === event);
    return describeHook(event, row === undefined ? undefined : matchOf(row));
  });
  lines.push(r.hooks.length === 0 ? "It hooks no events." : `It hooks ${plural(r.hooks.length, "event")}: ${hooks.join(", ")}`);
  if (r.commands.length > 0) lines.push(`It adds commands: ${r.commands.map((c) => `/${c}`).join(", ")}`);
  lines.push("");
  lines.push(`Limits: memory ${r.limits.memory_mb} MiB, deadline ${r.limits.deadline_ms} ms per call, idle ${r.limits.idle_s} s, storage ${r.limits.kv_bytes} bytes, ${r.limits.fetches} fetches at once per call (under the operator's max_fetches), ${r.limits.concurrency === 1 ? "one satellite per session (calls one at a time)" : `up to ${r.limits.concurrency} satellites per session (calls in parallel; under the operator's max_concurrency and max_pool_memory_mb)`}`);
  if (review.diff !== null) {
    lines.push("");
    lines.push(review.widens ? "CHANGED SINCE APPROVAL — this upgrade asks for MORE than was approved:" : "Changed since approval (nothing widened):");
    lines.push(...renderDiff(review.diff));
  }
  lines.push("");
  if (review.status !== "approved") lines.push(`To allow it: tether approve ${review.name}${r.net.length > 0 ? "   (narrow egress with --only <rule>)" : ""}`);
  return lines.join("\n");
}

/** A diff's lines: `  + network: <rule>` for each thing asked for beyond the approval, then `  - …` for each given up. */
export function renderDiff(d: GrantDiff): string[] {
  const lines: string[] = [];
  for (const rule of d.addedNet) lines.push(`  + network: ${rule}`);
  for (const tool of d.addedTools) lines.push(`  + tool: ${tool}`);
  for (const hook of d.addedHooks) lines.push(`  + hook: ${hook}`);
  for (const command of d.addedCommands) lines.push(`  + command: /${command}`);
  for (const [key, was, now] of d.raisedLimits) lines.push(`  + limit ${key}: ${was} → ${now}`);
  for (const rule of d.removedNet) lines.push(`  - network: ${rule}`);
  for (const tool of d.removedTools) lines.push(`  - tool: ${tool}`);
  for (const hook of d.removedHooks) lines.push(`  - hook: ${hook}`);
  for (const command of d.removedCommands) lines.push(`  - command: /${command}`);
  for (const [key, was, now] of d.loweredLimits) lines.push(`  - limit ${key}: ${was} → ${now}`);
  return lines;
}
