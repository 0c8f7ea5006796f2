/**
 * Managed preparation (`[managed]`): after its satellite booted and its
 * context loaders answered, a managed extension is asked `prepare` for this
 * session — instructions and context for the model, warnings for the
 * operator, which of its tools and commands are on here, whether it observes.
 * The answer may only narrow what the operator approved: a tool or command it
 * does not declare, or that was not approved, or observing without an
 * approved `[observe]`, is a failed preparation, like an error or a timeout.
 *
 * `close` lets go of what `prepare` made. It is asked whenever a prepared (or
 * failed-to-prepare) extension leaves the session, within its own time
 * limit; what it answers or how it fails is noted, never waited past.
 */
import type { SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import type { Manifest } from "../install/manifest.js";
import type { Grants } from "../registry/grants.js";
import type { SessionScope } from "../kernel/session-scope.js";
import { askSessionKind } from "./ask-session-kind.js";
import type { ContextPiece } from "./context-loaders.js";

/** What a preparation decided for this session. */
export interface Prepared {
  readonly pieces: readonly ContextPiece[];
  readonly warnings: readonly string[];
  /** The tools on in this session; null: every one it declares (it did not narrow them). */
  readonly tools: readonly string[] | null;
  readonly commands: readonly string[] | null;
  readonly observes: boolean;
}

export type CloseReason = SessionPayload<"close">["reason"];

/** Whether `extension` is an approved managed extension (prepared at activation, closed when let go). */
export function isManaged(manifest: Manifest, grants: Grants): boolean {
  return manifest.managed !== undefined && grants.managed;
}

/** Whether it observes the session unless a preparation says otherwise: its approved `[observe]`. */
export function observesByDefault(manifest: Manifest, grants: Grants): boolean {
  return manifest.observe !== undefined && grants.observe.length > 0;
}

/** The first name in `asked` that is not declared, or not approved, as the reason; null when all are. */
function outside(
  noun: string,
  asked: readonly string[],
  declared: readonly string[],
  approved: readonly string[],
): string | null {
  for (const name of asked) {
    if (!declared.includes(name))
      return (
        `it turned on ${noun} '${name}', which its manifest does not declare (it declares ` +
        `[${[...declared].sort().join(", ")}])`
      );
    if (!approved.includes(name)) return `it turned on ${noun} '${name}', which the operator did not approve`;
  }
  return null;
}

/** Asks `prepare` and checks the answer against what was declared and approved. */
export async function prepareManaged(
  scope: SessionScope,
  extension: string,
  manifest: Manifest,
  grants: Grants,
  payload: SessionPayload<"prepare">,
): Promise<{ ok: true; prepared: Prepared } | { ok: false; reason: string }> {
  const asked = await askSessionKind(scope, extension, "prepare", "prepare", payload);
  if (!asked.ok) return { ok: false, reason: `preparation failed: ${asked.problem}` };
  const answer = asked.answer;
  const problem =
    outside(
      "tool",
      answer.tools ?? [],
      manifest.tool.map((t) => t.name),
      grants.tools,
    ) ??
    outside(
      "command",
      (answer.commands ?? []).map((c) => c.replace(/^\//, "")),
      manifest.command.map((c) => c.name),
      grants.commands,
    ) ??
    (answer.observe === true && !observesByDefault(manifest, grants)
      ? "it asked to observe the session, which needs an approved [observe] table"
      : null);
  if (problem !== null) return { ok: false, reason: `preparation failed: ${problem}` };
  const pieces: ContextPiece[] = [];
  for (const text of [answer.instructions, answer.context])
    if (text !== undefined && text !== "") pieces.push({ extension, source: "prepare", text });
  return {
    ok: true,
    prepared: {
      pieces,
      warnings: answer.warnings ?? [],
      tools: answer.tools !== undefined ? [...new Set(answer.tools)] : null,
      commands: answer.commands !== undefined ? [...new Set(answer.commands.map((c) => c.replace(/^\//, "")))] : null,
      observes: answer.observe ?? observesByDefault(manifest, grants),
    },
  };
}

/**
 * Asks `close` with `reason`, bounded by its `close_deadline_ms` (waiting for
 * a fresh satellite included, when the old one was killed). Null when it
 * answered; else a note saying why not.
 */
export async function closeManaged(
  scope: SessionScope,
  extension: string,
  reason: CloseReason,
): Promise<string | null> {
  const asked = await askSessionKind(scope, extension, "close", "close", { session_id: scope.id, reason });
  return asked.ok ? null : `close of '${extension}' (${reason}) failed: ${asked.problem}`;
}
