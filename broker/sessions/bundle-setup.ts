/**
 * What activation does for one extension once its satellite is up: its
 * context loaders (context-loaders.ts), then, for a managed extension, its
 * preparation (preparation.ts). The bundle is set up whole or not at all: a
 * failure anywhere is the reason it is inactive, and a failed preparation is
 * followed by `close` with `prepare_failed` so the extension can let go of
 * whatever it made before failing.
 */
import type { Manifest } from "../install/manifest.js";
import type { Grants } from "../registry/grants.js";
import type { SessionScope } from "../kernel/session-scope.js";
import type { Plan } from "./activation.js";
import { loadContexts, type ContextPiece } from "./context-loaders.js";
import { closeManaged, isManaged, observesByDefault, prepareManaged } from "./preparation.js";

/** What one active extension contributes to this session beyond its manifest. */
export interface Setup {
  /** Its loaders' texts, then its preparation's instructions and context. */
  readonly pieces: readonly ContextPiece[];
  /** Its preparation's warnings, for the operator. */
  readonly warnings: readonly string[];
  /** The tools on in this session; null: every one it declares. */
  readonly tools: readonly string[] | null;
  readonly commands: readonly string[] | null;
  readonly observes: boolean;
  /** It was prepared: `close` is asked when the session lets it go. */
  readonly managed: boolean;
}

/** The session as a setup sees it. */
export interface SetupSession {
  readonly id: string;
  readonly workspace: string;
  /** The session was open before (reopened, or a reload). */
  readonly resumed: boolean;
  /** The extensions planned active when it is asked, in registry order. */
  readonly active: readonly string[];
}

/** Sets up `extension`: its Setup, or why it is inactive (and the note of a failed close). */
export async function setUpBundle(
  scope: SessionScope,
  extension: string,
  manifest: Manifest,
  grants: Grants,
  session: SetupSession,
): Promise<{ ok: true; setup: Setup } | { ok: false; reason: string; closeNote: string | null }> {
  const loaded = await loadContexts(scope, extension, manifest, grants, session);
  if (!loaded.ok) return { ok: false, reason: loaded.reason, closeNote: null };
  if (!isManaged(manifest, grants)) {
    return {
      ok: true,
      setup: {
        pieces: loaded.pieces,
        warnings: [],
        tools: null,
        commands: null,
        observes: observesByDefault(manifest, grants),
        managed: false,
      },
    };
  }
  const prepared = await prepareManaged(scope, extension, manifest, grants, {
    session_id: session.id,
    workspace: session.workspace,
    resumed: session.resumed,
    active: [...session.active],
  });
  if (!prepared.ok)
    return { ok: false, reason: prepared.reason, closeNote: await closeManaged(scope, extension, "prepare_failed") };
  const { pieces, ...rest } = prepared.prepared;
  return { ok: true, setup: { ...rest, pieces: [...loaded.pieces, ...pieces], managed: true } };
}

/**
 * `plan` with the tools and commands each setup left off taken out (their names stay owned:
 * collisions are judged on what is declared).
 */
export function narrowPlan(plan: Plan, setups: ReadonlyMap<string, Setup>): Plan {
  const on = (field: "tools" | "commands") =>
    new Map(
      [...plan[field]].filter(([name, extension]) => {
        const kept = setups.get(extension)?.[field];
        return kept === null || kept === undefined || kept.includes(name);
      }),
    );
  return { ...plan, tools: on("tools"), commands: on("commands") };
}
