/**
 * `tether review`: what an extension can reach, in plain words, and on an
 * upgrade the diff against what was approved, so a widening cannot be missed.
 */
import { satellitesOf } from "../install/manifest.js";
import { modelReviewLines } from "../install/model-table.js";
import { actReviewLines } from "../install/act-row.js";
import { originsOf } from "../install/login-row.js";
import { describeRule, type RuleDescription } from "../egress/describe-rule.js";
import type { Reach } from "../egress/reach.js";
import { reachWarnings, type ReachWarning } from "../egress/rule-reach.js";
import { describeHook } from "../hooks/hook-subject.js";
import { matchOf } from "../install/hook-row.js";
import { sightLines } from "../hooks/hook-sight.js";
import { EVENT_NAMES, type EventName } from "../../jail-runtime/wire/events.js";
import type { ArtifactRecord } from "./artifact-records.js";
import type { MigrationPlan } from "./migrations.js";
import type { Approval, Installed, InstallStatus } from "./registry.js";
import {
  diffGrants,
  requestedGrants,
  secretItems,
  secretPlace,
  serviceGrant,
  widens,
  type GrantDiff,
  type Grants,
} from "./grants.js";
import { sourceChanges, type SourceChange } from "./source-changes.js";

/** What a review reads besides the install and the approval. */
export interface ReviewContext {
  /** What the approved and the installed artifacts were built from (null: not recorded). */
  readonly approvedArtifact?: ArtifactRecord | null;
  readonly installedArtifact?: ArtifactRecord | null;
  /** The size of the approved manifest's text, when it was kept. */
  readonly approvedManifestBytes?: number | null;
  /** The operator's policy.toml as it stands: its reach, or why it does not parse. */
  readonly policy?: { readonly reach: Reach | Error; readonly file: string };
  /** Requested rules an approval now keeps out (an earlier --only). */
  readonly withheld?: readonly string[];
  /** Whether each secret is set in the operator's store (a string: why the store cannot be read). */
  readonly secretSet?: (name: string) => boolean | string;
  /** Its migrations and what its database has (an Error: they cannot be read). */
  readonly migrations?: MigrationPlan | Error;
}

/** An upgrade's artifact against the approved one. */
export interface ArtifactChange {
  readonly before: { readonly hash: string; readonly bytes: number | null };
  readonly after: { readonly hash: string; readonly bytes: number | null };
  /** The source files that differ, manifest.toml included. */
  readonly sources: readonly SourceChange[];
  /**
   * False when the approved artifact's sources were not recorded (an older broker installed it):
   * only manifest.toml is compared.
   */
  readonly sourcesKnown: boolean;
}

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
  /** Set on an upgrade: the artifacts' sizes and hashes, and the files that differ. */
  readonly changes: ArtifactChange | null;
  /** Requested rules the operator's policy leaves unreachable: each one's refusal and the switch it needs. */
  readonly reach: readonly ReachWarning[];
  /** policy.toml does not parse (every egress call is refused until it is fixed). */
  readonly policyError: string | null;
  /** Requested rules an approval now keeps out unless `--all` (withheld by an earlier `--only`). */
  readonly withheld: readonly string[];
  /** Each requested secret: set or not (unknown: null; a string: why the store cannot be read). */
  readonly secrets: ReadonlyArray<{ readonly name: string; readonly set: boolean | string | null }>;
  /** Its migrations, which the database has, and what would stop approving (null: not read). */
  readonly migrations: MigrationPlan | { readonly error: string } | null;
  /** The latest approval's revocation: who (null: not recorded) and when; null when it is not revoked. */
  readonly revoked: { readonly by: string | null; readonly at: number } | null;
}

export function buildReview(
  installed: Installed,
  status: InstallStatus,
  approval: Approval | null,
  context: ReviewContext = {},
): Review {
  const requested = requestedGrants(installed.manifest);
  // A diff only when what is installed is not what was approved (an upgrade).
  const changed =
    approval !== null &&
    (approval.manifestHash !== installed.manifestHash || approval.artifactHash !== installed.artifactHash);
  // Rules an earlier --only withheld were seen and left out: asking for them again is not new.
  const seen =
    approval === null
      ? null
      : {
          ...approval.grants,
          net: [...new Set([...approval.grants.net, ...approval.withheldNet, ...(context.withheld ?? [])])],
        };
  const diff = changed ? diffGrants(seen!, requested) : null;
  const policy = context.policy;
  const reach =
    policy === undefined || policy.reach instanceof Error
      ? []
      : reachWarnings(requested.net, policy.reach, policy.file);
  const before = context.approvedArtifact ?? null;
  const after = context.installedArtifact ?? null;
  let changes: ArtifactChange | null = null;
  if (changed) {
    const sameArtifact = approval!.artifactHash === installed.artifactHash;
    // The same artifact was built from what the bundle read then: only the manifest can differ.
    const code = sameArtifact
      ? []
      : before === null || after === null
        ? null
        : sourceChanges(before.sources, after.sources);
    const manifest: SourceChange[] =
      approval!.manifestHash === installed.manifestHash
        ? []
        : [
            {
              path: "manifest.toml",
              change: "changed",
              before: {
                path: "manifest.toml",
                sha256: approval!.manifestHash,
                bytes: context.approvedManifestBytes ?? null,
              },
              after: {
                path: "manifest.toml",
                sha256: installed.manifestHash,
                bytes: Buffer.byteLength(installed.manifestText),
              },
            },
          ];
    changes = {
      before: { hash: approval!.artifactHash, bytes: before?.bytes ?? null },
      after: { hash: installed.artifactHash, bytes: after?.bytes ?? null },
      sources: [...manifest, ...(code ?? [])].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
      sourcesKnown: code !== null,
    };
  }
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
    changes,
    reach,
    policyError:
      policy !== undefined && policy.reach instanceof Error && requested.net.length > 0 ? policy.reach.message : null,
    withheld: requested.net.filter((rule) => context.withheld?.includes(rule) === true),
    secrets: requested.secrets.map((b) => ({ name: b.name, set: context.secretSet?.(b.name) ?? null })),
    migrations:
      context.migrations === undefined
        ? null
        : context.migrations instanceof Error
          ? { error: context.migrations.message }
          : context.migrations,
    revoked:
      approval === null || approval.revokedAt === null
        ? null
        : { by: approval.revokedBy ?? null, at: approval.revokedAt },
  };
}

const size = (bytes: number | null) => (bytes === null ? "size not recorded" : `${bytes} bytes`);

/** The upgrade's artifact lines: sizes and hashes, and which files differ. */
function renderChanges(c: ArtifactChange, name: string): string[] {
  const lines: string[] = [];
  if (c.before.hash !== c.after.hash) {
    lines.push(
      `  artifact: ${size(c.before.bytes)} (sha256 ${c.before.hash.slice(0, 16)}…) → ${size(c.after.bytes)} ` +
        `(sha256 ${c.after.hash.slice(0, 16)}…)`,
    );
  }
  const listed = c.sources.map((s) => `${s.path} (${s.change})`);
  if (!c.sourcesKnown)
    listed.push("others not known (the approved install was made before Tether recorded its sources)");
  else if (c.before.hash !== c.after.hash && !c.sources.some((s) => s.path !== "manifest.toml")) {
    listed.push("no other file of the folder (the SDK or the bundler changed what the artifact is built into)");
  }
  if (listed.length > 0) lines.push(`  files that differ: ${listed.join(", ")}`);
  if (c.sources.length > 0) lines.push(`  to see how: tether review ${name} --diff`);
  return lines;
}

const isEventName = (event: string): event is EventName => (EVENT_NAMES as readonly string[]).includes(event);

/** The session-facing kinds it contributes, each with what it sees ([NEW] on an upgrade that adds it). */
function sessionLines(installed: Installed, diff: GrantDiff | null): string[] {
  const m = installed.manifest;
  const tag = (item: string) => (diff?.addedSession.includes(item) ? "   [NEW]" : "");
  const lines: string[] = [];
  for (const row of m.context)
    lines.push(
      `It loads context: ${row.name} — ${row.description} (sees the session's id and workspace ` +
        `path)${tag(`context ${row.name}`)}`,
    );
  for (const row of m.route) {
    // An MCP client (and so the model's harness) may read it, not only the harness's own code.
    const resource = row.resource !== undefined ? ` (MCP resource ${row.resource.uri}, ${row.resource.mime_type})` : "";
    lines.push(
      `It serves a route the harness calls: ${row.name} — ${row.description}${resource}${tag(`route ${row.name}`)}`,
    );
  }
  for (const row of m.compaction)
    lines.push(
      `It offers a compaction strategy: ${row.name} — ${row.description} (sees the whole conversation when ` +
        `chosen)${tag(`compaction ${row.name}`)}`,
    );
  if (m.managed !== undefined)
    lines.push(
      `It is managed: prepared for each session (sees the session's id, workspace path and active extensions; ` +
        `keeps per-session state)${tag("managed")}`,
    );
  for (const row of m.provider) {
    lines.push(
      `It is a model provider: ${row.name} — ${row.description} (runs as a daemon satellite; sees every ` +
        `conversation a harness asks it to complete)${tag(`provider ${row.name}`)}`,
    );
    if (row.base_url !== "")
      lines.push(
        `      its API: ${row.base_url}${row.secret !== undefined ? ` (with the secret '${row.secret}')` : ""}`,
      );
    for (const model of row.models)
      lines.push(
        `      model ${model.id}: ${model.context_window} tokens, ` +
          `$${model.input_price_per_mtok}/$${model.output_price_per_mtok} per million ` +
          `in/out${model.capabilities.length > 0 ? `, ${model.capabilities.join(", ")}` : ""}`,
      );
  }
  for (const row of m.service) {
    lines.push(
      `It serves HTTP: ${row.methods.join(",")} /ext/${m.name}${row.path} — ${row.description} (runs as a ` +
        `daemon satellite; sees each request's path, query, headers and body, never cookies or the ` +
        `token; ${row.rate_per_minute}/min, bodies up to ${row.max_body_bytes} ` +
        `bytes)${tag(`service ${serviceGrant(row)}`)}`,
    );
  }
  for (const row of m.search)
    lines.push(
      `It serves search provider ${row.name}: ${row.description} (sees the queries of the sessions it is ` +
        `active in)${tag(`search ${row.name}`)}`,
    );
  if (m.capabilities?.search === true)
    lines.push(
      `It asks the session's search providers (capability search.query; sees their results)` +
        `${tag("capability search")}`,
    );
  lines.push(...modelReviewLines(m.model, tag("model") !== ""));
  lines.push(...actReviewLines(m.act, tag));
  // The added kinds' rows, each as its kind says what it sees.
  for (const [kind, section] of Object.entries(m.kinds ?? {}))
    for (const row of section.rows)
      lines.push(
        `It serves ${kind}: ${row.name}${row.description !== undefined ? ` — ${row.description}` : ""} ` +
          `(${section.sees})${tag(`${kind} ${row.name}`)}`,
      );
  if (m.observe !== undefined)
    lines.push(
      `It observes the session: ${m.observe.events.join(", ")} (told as they happen; answers ` +
        `nothing)${m.observe.events.some((e) => tag(`observe ${e}`) !== "") ? "   [NEW]" : ""}`,
    );
  return lines;
}

/** Its `[[login]]` rows: where the operator would sign in, and which secret the token fills (docs/login.md). */
function loginLines(installed: Installed): string[] {
  const rows = installed.manifest.login;
  if (rows.length === 0) return [];
  const lines = [
    `It asks you to sign in (${plural(rows.length, "login")}; tether login ${installed.name} — the broker ` +
      `keeps the tokens, the jail never sees them):`,
  ];
  for (const row of rows) {
    const start = row.flow === "device" ? row.device_authorization_endpoint : row.authorization_endpoint;
    const scopes = row.scopes.length > 0 ? `scopes ${row.scopes.join(" ")}` : "the server's default scopes";
    lines.push(`  ${row.name} — ${row.description}`);
    lines.push(
      `      ${row.flow === "device" ? "device flow" : "browser sign-in (authorization code)"} at ${start}, ` +
        `tokens from ${row.token_endpoint}, ${scopes}; the access token fills the secret ${row.secret}`,
    );
    const origins = originsOf(row);
    if (origins.length > 1)
      lines.push(
        `  ! ${row.name}: its endpoints are on ${origins.length} origins (${origins.join(", ")}): the token ` +
          `endpoint at ${new URL(row.token_endpoint).origin} receives your authorization code and PKCE verifier`,
      );
    // Where the token goes: the secret's rules, which may be another origin than the sign-in's.
    const secret = installed.manifest.secret.find((s) => s.name === row.secret);
    const elsewhere = (secret?.rules ?? []).filter((rule) => !origins.some((o) => ruleOrigin(rule) === o));
    if (elsewhere.length > 0)
      lines.push(
        `  ! ${row.name}: its token is sent to ${elsewhere.join(", ")}, not the sign-in's origin ` +
          `(${origins.join(", ")})`,
      );
  }
  return lines;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * Where a line of the review belongs: the console shows each in its own section, `tether review`
 * prints them in this order.
 */
export type ReviewSection =
  | "summary"
  | "rules"
  | "secrets"
  | "tools"
  | "hooks"
  | "commands"
  | "contributions"
  | "logins"
  | "limits"
  | "storage"
  | "migrations"
  | "init"
  | "diff"
  | "next";

/** One line of the review as `tether review` prints it, with what the console needs to place and mark it. */
export interface ReviewLine {
  readonly section: ReviewSection;
  /** The line as printed (before control characters are written out); "" between parts. */
  readonly text: string;
  /** On an egress rule's lines: the rule as written in the manifest. */
  readonly rule?: string;
  /** Set on what asks for more than was approved (a [NEW] item, a `+` line of the diff). */
  readonly widening?: boolean;
  /** A detail of the line above it (what a rule means, what a hook sees). */
  readonly detail?: boolean;
}

/** Who revoked the approval and when, for a revoked extension. */
function revokedNote(review: Review): string {
  if (review.status !== "revoked" || review.revoked === null) return "";
  return (
    ` — revoked${review.revoked.by === null ? "" : ` by ${review.revoked.by}`} ` +
    `at ${new Date(review.revoked.at).toISOString()}`
  );
}

/** The review's lines, each in its section: `renderReview` prints them, the console shows them. */
export function reviewLines(review: Review, installed: Installed): ReviewLine[] {
  const lines: ReviewLine[] = [];
  const push = (section: ReviewSection, text: string, extra: Omit<ReviewLine, "section" | "text"> = {}) => {
    const widening = extra.widening ?? text.includes("[NEW]");
    lines.push({ section, text, ...extra, ...(widening ? { widening } : {}) });
  };
  const r = review.requested;
  push("summary", `${review.name} ${review.version} — ${review.description}`);
  push("summary", `status: ${review.status}${revokedNote(review)}`);
  push("summary", "");
  push("rules", "It can reach:");
  if (r.net.length === 0) push("rules", "  the network: nothing (no egress rules)");
  else
    for (const rule of r.net) {
      const tag = review.diff?.addedNet.includes(rule)
        ? "   [NEW]"
        : review.approved !== null && review.diff === null && !review.approved.net.includes(rule)
          ? "   (requested, not granted)"
          : review.withheld.includes(rule)
            ? "   (withheld by an earlier --only: approving keeps it out; --all grants it)"
            : "";
      push("rules", `  the network: ${rule}${tag}`, { rule });
      const decoded = review.decoded.find((d) => d.rule === rule) ?? describeRule(rule);
      push("rules", `      means: ${decoded.canonical === null ? "" : `${decoded.canonical} — `}${decoded.summary}`, {
        rule,
        detail: true,
      });
      for (const w of review.reach.filter((w) => w.rule === rule))
        push(
          "rules",
          `      ! every call to its ${w.class.replace(/_/g, "-")} addresses is refused (${w.refusal}): ${w.fix}`,
          { rule, detail: true },
        );
    }
  if (review.policyError !== null)
    push(
      "rules",
      `  ! the operator's policy does not parse, so every egress call is refused until it is ` +
        `fixed: ${review.policyError}`,
    );
  for (const line of secretLines(review, installed)) push("secrets", line.text, line.detail ? { detail: true } : {});
  push("rules", "  files, environment, processes: nothing (jailed; only capabilities the broker serves)");
  push("rules", "");
  push("tools", `It adds ${plural(r.tools.length, "tool")}:`);
  for (const tool of installed.manifest.tool)
    push(
      "tools",
      `  ${tool.name} — ${tool.description}${review.diff?.addedTools.includes(tool.name) ? "   [NEW]" : ""}`,
    );
  // Each hook with what approving it lets it see and do: a hook's reach is the session's, not its own.
  // A matcher narrows what the hook is asked about; the approval is still for the whole event.
  push("hooks", r.hooks.length === 0 ? "It hooks no events." : `It hooks ${plural(r.hooks.length, "event")}:`);
  for (const event of r.hooks) {
    const row = installed.manifest.hook.find((h) => h.event === event);
    const match = row === undefined ? undefined : matchOf(row);
    push("hooks", `  ${describeHook(event, match)}${review.diff?.addedHooks.includes(event) ? "   [NEW]" : ""}`);
    if (isEventName(event))
      for (const line of sightLines(event, match !== undefined)) push("hooks", `      ${line}`, { detail: true });
  }
  if (r.commands.length > 0) push("commands", `It adds commands: ${r.commands.map((c) => `/${c}`).join(", ")}`);
  for (const line of sessionLines(installed, review.diff))
    push("contributions", line, line.startsWith("      ") ? { detail: true } : {});
  for (const line of loginLines(installed)) push("logins", line, line.startsWith("      ") ? { detail: true } : {});
  push("limits", "");
  const processes = satellitesOf(r.limits);
  const satellites =
    r.limits.concurrency === 1
      ? "one satellite per session (calls one at a time)"
      : `up to ${r.limits.concurrency} calls open at once per session, in ` +
        (processes === 1
          ? "one satellite"
          : `up to ${processes} satellites (under the operator's max_concurrency and max_pool_memory_mb)`);
  push(
    "limits",
    `Limits: memory ${r.limits.memory_mb} MiB, deadline ${r.limits.deadline_ms} ms per call, ` +
      `idle ${r.limits.idle_s} s, storage ${r.limits.kv_bytes} bytes, ` +
      `${r.limits.fetches} fetches at once per call (under the operator's max_fetches), ${satellites}`,
  );
  if (r.storage !== null)
    push(
      "storage",
      `Database: its own SQLite file (<home>/data/${installed.manifest.name}.sqlite), up ` +
        `to ${r.storage.max_bytes} bytes, through db.query and db.exec ([storage]; docs/storage.md)`,
    );
  for (const line of migrationLines(review.migrations))
    push("migrations", line, line.startsWith("      ") ? { detail: true } : {});
  const init = installed.manifest.init;
  if (init !== undefined)
    push(
      "init",
      `Initializer: runs once per approved version, after its migrations, up ` +
        `to ${Math.min(init.deadline_ms, r.limits.deadline_ms)} ms ([init]; docs/initializers.md)`,
    );
  if (review.diff !== null) {
    push("diff", "");
    push(
      "diff",
      review.widens
        ? "CHANGED SINCE APPROVAL — this upgrade asks for MORE than was approved:"
        : "Changed since approval (nothing widened):",
      { widening: false },
    );
    for (const line of renderDiff(review.diff)) push("diff", line, { widening: line.startsWith("  + ") });
    if (review.changes !== null) for (const line of renderChanges(review.changes, review.name)) push("diff", line);
  }
  push("next", "");
  const withheld =
    review.withheld.length > 0
      ? `; --all also grants what an earlier --only withheld: ${review.withheld.join(", ")}`
      : "";
  if (review.status !== "approved")
    push(
      "next",
      `To allow it: tether approve ${review.name}` +
        `${r.net.length > 0 ? `   (narrow egress with --only <rule>${withheld})` : ""}`,
    );
  return lines;
}

export function renderReview(review: Review, installed: Installed): string {
  // Everything the extension wrote (its description, its tools', its migrations') reaches the
  // terminal with its control characters written out.
  return reviewLines(review, installed)
    .map((line) => line.text)
    .join("\n")
    .split("\n")
    .map(visibleText)
    .join("\n");
}

/**
 * A migration's text as the terminal should show it: every control character
 * (ESC sequences, a bare CR, backspace…) and every bidirectional override
 * written out as `\u{…}`, so what the operator reads is the text that runs,
 * not what the text makes the terminal draw over it.
 */
export const visibleText = (text: string): string =>
  text.replace(
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );

/** At most this many lines of a pending migration's SQL are shown (the rest: tether review --diff). */
const SHOWN_SQL_LINES = 12;

/** Its migrations: each one's summary, applied or run by approving (with its SQL), and what stops approving. */
function migrationLines(plan: Review["migrations"]): string[] {
  if (plan === null) return [];
  if ("error" in plan) return [`  ! its migrations cannot be read: ${plan.error}`];
  if (plan.migrations.length === 0 && plan.problems.length === 0) return [];
  const pending = plan.migrations.filter((m) => m.applied === null).length;
  const running = pending > 0 ? `; approving runs ${pending} on it, in order, in one transaction (all or none)` : "";
  const lines = [`Migrations: ${plan.migrations.length} shipped, the database has ${plan.at}${running}:`];
  for (const m of plan.migrations) {
    if (m.applied !== null) {
      lines.push(
        `  ${m.name} — ${visibleText(m.summary)}   ` +
          `(applied${m.applied.version === null ? "" : ` by ${m.applied.version}`})`,
      );
      continue;
    }
    lines.push(`  ${m.name} — ${visibleText(m.summary)}   [NEW: runs when approved]`);
    const sql = m.text.trimEnd().split(/\r?\n/);
    for (const line of sql.slice(0, SHOWN_SQL_LINES)) lines.push(`      | ${visibleText(line)}`);
    if (sql.length > SHOWN_SQL_LINES)
      lines.push(`      | … ${sql.length - SHOWN_SQL_LINES} more lines (tether review --diff shows them all)`);
  }
  for (const problem of plan.problems) lines.push(`  ! approving is refused: ${problem}`);
  return lines;
}

/** The origin a rule's URL names (for comparing with a sign-in's), or the rule as written. */
function ruleOrigin(rule: string): string {
  try {
    return new URL(rule.replace(/\/\*$/, "/").replace(/^(\w+:\/\/)\*\./, "$1wildcard.")).origin;
  } catch {
    return rule;
  }
}

/** The secrets it asks the broker to send for it, where each goes, and whether the operator set it. */
function secretLines(review: Review, installed: Installed): Array<{ text: string; detail: boolean }> {
  const r = review.requested;
  if (r.secrets.length === 0) return [];
  const lines = [{ text: "  secrets, sent by the broker (the extension never sees them):", detail: false }];
  for (const b of r.secrets) {
    const set = review.secrets.find((s) => s.name === b.name)?.set ?? null;
    // A secret a sign-in fills is never one to set by hand.
    const login = installed.manifest.login.find((l) => l.secret === b.name);
    const status =
      login !== undefined
        ? ` (filled by signing in: tether login ${review.name} ${login.name})`
        : set === null
          ? ""
          : set === true
            ? " (set)"
            : set === false
              ? ` (NOT SET: tether secret set ${review.name} ${b.name})`
              : ` (the secrets file cannot be read: ${set})`;
    const added =
      review.diff !== null &&
      secretItems({ ...r, secrets: [b] }).some((item) => review.diff!.addedSecrets.includes(item));
    lines.push({
      text: `    ${b.name} — sent as ${secretPlace(b)} to ${b.rules.join(", ")}${status}${added ? "   [NEW]" : ""}`,
      detail: false,
    });
    const row = installed.manifest.secret.find((s) => s.name === b.name);
    if (row !== undefined && row.description !== "") lines.push({ text: `      ${row.description}`, detail: true });
    // What redaction cannot promise, for every rule it is bound to (docs/secrets.md, What is not protected).
    lines.push({
      text:
        `      note: any server under ${b.rules.join(", ")} can hand it back in a form the broker does not ` +
        `recognise (a hash, a byte per response); bind it to that API alone`,
      detail: false,
    });
  }
  return lines;
}

/**
 * A diff's lines: `  + network: <rule>` for each thing asked for beyond the approval, then `  - …`
 * for each given up.
 */
export function renderDiff(d: GrantDiff): string[] {
  const lines: string[] = [];
  for (const rule of d.addedNet) lines.push(`  + network: ${rule}`);
  for (const tool of d.addedTools) lines.push(`  + tool: ${tool}`);
  for (const hook of d.addedHooks) lines.push(`  + hook: ${hook}`);
  for (const command of d.addedCommands) lines.push(`  + command: /${command}`);
  for (const item of d.addedSession) lines.push(`  + ${item}`);
  for (const item of d.addedSecrets) lines.push(`  + secret ${item}`);
  for (const [key, was, now] of d.raisedLimits) lines.push(`  + limit ${key}: ${was} → ${now}`);
  for (const rule of d.removedNet) lines.push(`  - network: ${rule}`);
  for (const tool of d.removedTools) lines.push(`  - tool: ${tool}`);
  for (const hook of d.removedHooks) lines.push(`  - hook: ${hook}`);
  for (const command of d.removedCommands) lines.push(`  - command: /${command}`);
  for (const item of d.removedSession) lines.push(`  - ${item}`);
  for (const item of d.removedSecrets) lines.push(`  - secret ${item}`);
  for (const [key, was, now] of d.loweredLimits) lines.push(`  - limit ${key}: ${was} → ${now}`);
  return lines;
}
