/**
 * `tether session folds <id>`: what compaction strategies folded in a session,
 * read from the store (no session is opened, nothing boots), one block per
 * compaction, oldest first.
 */
import type { Broker } from "../broker.js";
import { FoldsRepository, type FoldRow } from "../store/folds-repository.js";

/** The longest fold text shown on one line; --json has it whole. */
const SHOWN = 120;

export function sessionFolds(broker: Broker, session: string): FoldRow[] {
  return new FoldsRepository(broker.store).list(session);
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > SHOWN ? `${flat.slice(0, SHOWN)}…` : flat;
}

export function renderFolds(session: string, folds: readonly FoldRow[]): string {
  if (folds.length === 0) return `Session ${session} has no folds: no compaction stored any.`;
  const lines: string[] = [];
  let current: number | null = null;
  for (const fold of folds) {
    if (fold.compactionId !== current) {
      current = fold.compactionId;
      lines.push(
        `compaction ${fold.compactionId}: strategy ${fold.strategy} ` +
          `of ${fold.extension}, ${new Date(fold.createdAt).toISOString()}`,
      );
    }
    lines.push(`  ${`${fold.from}..${fold.to}`.padEnd(11)} ${oneLine(fold.text)}`);
  }
  return lines.join("\n");
}
