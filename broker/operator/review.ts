/**
 * The review `tether review` prints, `tether approve` shows before it asks and
 * the console's pages are built from:
 * the registry's review with what else it reads — what the approved and the
 * installed artifacts were built from, the operator's policy.toml (rules it
 * leaves unreachable), the rules an approval keeps out — and, with `--diff`,
 * how each source file of an upgrade changed.
 */
import { OperatorPolicySource } from "../caps/policy.js";
import { secretStatus } from "./secret-status.js";
import type { Installed, Registry } from "../registry/registry.js";
import { buildReview, renderReview, visibleText, type Review } from "../registry/review.js";
import type { MigrationPlan } from "../registry/migrations.js";
import { sourceDiffs, type SourceDiff } from "../registry/source-changes.js";

/** What a review reads: the registry, and the home (the operator's policy.toml, the secrets). */
export interface ReviewHost {
  readonly registry: Registry;
  readonly home: string;
}

/** The review of installed extension `name` (an error naming what to run when it is not installed). */
export function reviewFor(host: ReviewHost, name: string): { installed: Installed; review: Review } {
  const registry = host.registry;
  const installed = registry.require(name);
  const approval = registry.latestApproval(name);
  const policy = new OperatorPolicySource(host.home);
  const current = policy.current();
  const review = buildReview(installed, registry.status(installed), approval, {
    approvedArtifact: approval === null ? null : registry.artifactRecord(name, approval.artifactHash),
    installedArtifact: registry.artifactRecord(name, installed.artifactHash),
    approvedManifestBytes: approval === null ? null : (registry.sourceContent(approval.manifestHash)?.length ?? null),
    policy: { reach: current instanceof Error ? current : current.reach, file: policy.file },
    withheld: registry.withheldOnApproval(name, installed),
    secretSet: secretStatus(host.home, name),
    migrations: planOrError(() => registry.migrationPlan(installed)),
  });
  return { installed, review };
}

function planOrError(plan: () => MigrationPlan): MigrationPlan | Error {
  try {
    return plan();
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** What `tether review` prints: the review, and with `diff` each changed source file's diff after it. */
export function reviewOutput(host: ReviewHost, name: string, diff: boolean): { value: unknown; text: string } {
  const { installed, review } = reviewFor(host, name);
  const text = renderReview(review, installed);
  if (!diff) return { value: review, text };
  const sources = review.changes?.sources ?? [];
  if (sources.length === 0) {
    const why =
      review.changes === null
        ? "nothing changed since the approval (or nothing was approved yet)"
        : review.changes.sourcesKnown
          ? "no file of the folder differs (the SDK or the bundler changed what the artifact is built into)"
          : "the approved install's sources were not recorded (installed by an older Tether)";
    return { value: { ...review, sourceDiff: [] }, text: `${text}\n\nNo source diff: ${why}` };
  }
  const diffs: SourceDiff[] = sourceDiffs(sources, (sha) => host.registry.sourceContent(sha));
  // A source's control characters written out, as review does for
  // a migration's SQL: the terminal draws nothing it is told to.
  const shown = diffs.map((d) =>
    d.unified === null || d.unified === undefined
      ? `${d.path} (${d.change}): ${d.note}`
      : d.unified.split(/\r?\n/).map(visibleText).join("\n"),
  );
  return {
    value: { ...review, sourceDiff: diffs },
    text: `${text}\n\nSource changes since the approval:\n\n${shown.join("\n\n")}`,
  };
}
