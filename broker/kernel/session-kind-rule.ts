/**
 * Whether an approved extension may be asked an invocation of a session-facing
 * kind (a context loader, its preparation or close, an observer batch, a
 * route, a compaction strategy, a provider, a service, the initializer), and its time limit: the row's (or the
 * `[managed]` table's) `deadline_ms`, 5 s by default, never more than the
 * extension's `[limits] deadline_ms`.
 */
import type { SessionKind } from "../../jail-runtime/wire/session-kinds.js";
import { WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import type { Manifest } from "../install/manifest.js";
import { serviceGrant, type Grants } from "../registry/grants.js";

/** The default time limit of a session-facing invocation, as for a hook. */
export const DEFAULT_SESSION_DEADLINE_MS = 5_000;

export function sessionKindRule(
  extension: string,
  manifest: Manifest,
  grants: Grants,
  kind: SessionKind,
  name: string,
): { deadlineMs: number } | Failure {
  const cap = (ms: number | undefined) => ({
    deadlineMs: Math.min(ms ?? DEFAULT_SESSION_DEADLINE_MS, grants.limits.deadline_ms),
  });
  const named = (rows: Manifest["context"], granted: readonly string[], noun: string) => {
    const row = rows.find((r) => r.name === name);
    if (row === undefined || !granted.includes(name))
      return failure(
        WireCode.unknownTool,
        `'${extension}' has no approved ${noun} '${name}'; it has [${[...granted].sort().join(", ")}]`,
      );
    return cap(row.deadline_ms);
  };
  switch (kind) {
    case "context":
      return named(manifest.context, grants.contexts, "context loader");
    case "route":
      return named(manifest.route, grants.routes, "route");
    case "compact":
      return named(manifest.compaction, grants.compactions, "compaction strategy");
    case "search":
      return named(manifest.search, grants.searches ?? [], "search provider");
    case "prepare":
    case "close":
      if (manifest.managed === undefined || !grants.managed)
        return failure(WireCode.unhandled, `'${extension}' is not an approved managed extension`);
      return cap(kind === "prepare" ? manifest.managed.prepare_deadline_ms : manifest.managed.close_deadline_ms);
    case "complete": {
      // A completion may take as long as the extension's own deadline allows.
      const row = manifest.provider.find((r) => r.name === name);
      if (row === undefined || !grants.providers.includes(name))
        return failure(
          WireCode.unknownTool,
          `'${extension}' has no approved provider '${name}'; it has [${[...grants.providers].sort().join(", ")}]`,
        );
      return cap(row.deadline_ms ?? grants.limits.deadline_ms);
    }
    case "service": {
      const row = manifest.service.find((r) => r.name === name);
      if (row === undefined || !grants.services.includes(serviceGrant(row)))
        return failure(WireCode.unknownTool, `'${extension}' has no approved service '${name}'`);
      return cap(row.deadline_ms);
    }
    case "init":
      // Its own default (10 s, the manifest's), capped like the others.
      if (manifest.init === undefined) return failure(WireCode.unhandled, `'${extension}' declares no [init]`);
      return cap(manifest.init.deadline_ms);
    case "observe":
      if (manifest.observe === undefined || grants.observe.length === 0)
        return failure(WireCode.unhandled, `'${extension}' is not an approved observer`);
      return cap(undefined);
  }
}
