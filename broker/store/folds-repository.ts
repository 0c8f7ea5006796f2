/**
 * The `folds` table: what each compaction folded, and the `strategy_preferences`
 * table: which strategy a session prefers. Checking folds and choosing a
 * strategy is `sessions/compaction.ts`'s work; this file only reads and writes rows.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Store } from "./open.js";
import { folds, strategyPreferences } from "./schema.js";

export interface FoldRow {
  readonly compactionId: number;
  readonly strategy: string;
  readonly extension: string;
  readonly from: number;
  readonly to: number;
  readonly text: string;
  readonly createdAt: number;
}

export class FoldsRepository {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Stores one compaction's folds together: all of them or none. */
  insert(
    sessionId: string,
    compactionId: number,
    strategy: string,
    extension: string,
    made: readonly { from: number; to: number; text: string }[],
  ): void {
    if (made.length === 0) return;
    const createdAt = Date.now();
    this.#store.orm.transaction((tx) => {
      tx.insert(folds)
        .values(
          made.map((f) => ({
            sessionId,
            compactionId,
            strategy,
            extension,
            fromIndex: f.from,
            toIndex: f.to,
            text: f.text,
            createdAt,
          })),
        )
        .run();
    });
  }

  /** A session's folds, oldest compaction first, each compaction's by position; or only one compaction's. */
  list(sessionId: string, compactionId?: number): FoldRow[] {
    const where =
      compactionId === undefined
        ? eq(folds.sessionId, sessionId)
        : and(eq(folds.sessionId, sessionId), eq(folds.compactionId, compactionId));
    return this.#store.orm
      .select({
        compactionId: folds.compactionId,
        strategy: folds.strategy,
        extension: folds.extension,
        from: folds.fromIndex,
        to: folds.toIndex,
        text: folds.text,
        createdAt: folds.createdAt,
      })
      .from(folds)
      .where(where)
      .orderBy(asc(folds.compactionId), asc(folds.fromIndex))
      .all();
  }

  preferredStrategy(sessionId: string): string | null {
    return (
      this.#store.orm
        .select({ strategy: strategyPreferences.strategy })
        .from(strategyPreferences)
        .where(eq(strategyPreferences.sessionId, sessionId))
        .get()?.strategy ?? null
    );
  }

  /** Saves the session's preferred strategy; `null` removes it. */
  setPreferredStrategy(sessionId: string, strategy: string | null): void {
    if (strategy === null) {
      this.#store.orm.delete(strategyPreferences).where(eq(strategyPreferences.sessionId, sessionId)).run();
      return;
    }
    const updatedAt = Date.now();
    this.#store.orm
      .insert(strategyPreferences)
      .values({ sessionId, strategy, updatedAt })
      .onConflictDoUpdate({ target: strategyPreferences.sessionId, set: { strategy, updatedAt } })
      .run();
  }
}
