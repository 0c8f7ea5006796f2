/**
 * Context loaders (`[[context]]`): when a session activates an extension, each
 * of its approved loaders is asked, in manifest order, for text the model
 * reads. One that fails, answers what its kind may not, or passes its time
 * limit fails the whole bundle — the extension is inactive with the reason.
 */
import type { Manifest } from "../install/manifest.js";
import type { Grants } from "../registry/grants.js";
import type { SessionScope } from "../kernel/session-scope.js";
import { askSessionKind } from "./ask-session-kind.js";

/** One text in the session's composed context, and where it came from. */
export interface ContextPiece {
  readonly extension: string;
  /** `context:<loader>`, or `prepare` (a managed extension's instructions, then its context). */
  readonly source: string;
  readonly text: string;
}

/** Asks `extension`'s approved loaders in turn; the first failure ends it with the bundle's reason. */
export async function loadContexts(
  scope: SessionScope,
  extension: string,
  manifest: Manifest,
  grants: Grants,
  session: { readonly id: string; readonly workspace: string },
): Promise<{ ok: true; pieces: ContextPiece[] } | { ok: false; reason: string }> {
  const pieces: ContextPiece[] = [];
  for (const row of manifest.context.filter((r) => grants.contexts.includes(r.name))) {
    const asked = await askSessionKind(scope, extension, "context", row.name, {
      session_id: session.id,
      workspace: session.workspace,
    });
    if (!asked.ok) return { ok: false, reason: `context loader '${row.name}' failed: ${asked.problem}` };
    // An empty text adds nothing the model would read.
    if (asked.answer.text !== "") pieces.push({ extension, source: `context:${row.name}`, text: asked.answer.text });
  }
  return { ok: true, pieces };
}
