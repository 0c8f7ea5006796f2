/**
 * The `sessions` table: one row per session id, with its workspace and its
 * policy as JSON text. Checking the id and the policy is
 * `sessions/session-records.ts`'s work; this file only reads and writes rows.
 */
import { eq } from "drizzle-orm";
import type { Store } from "./open.js";
import { sessions } from "./schema.js";

export interface SessionRow {
  readonly id: string;
  readonly workspace: string;
  /** The policy as stored (JSON text). */
  readonly policy: string;
  readonly openedAt: number;
  readonly closedAt: number | null;
}

export class SessionRecordsRepository {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Inserts the session, or reopens it: the workspace and policy are replaced, `closedAt` cleared, `openedAt` kept. */
  upsert(id: string, workspace: string, policy: string): void {
    this.#store.orm
      .insert(sessions)
      .values({ id, workspace, policy, openedAt: Date.now() })
      .onConflictDoUpdate({ target: sessions.id, set: { workspace, policy, closedAt: null } })
      .run();
  }

  get(id: string): SessionRow | null {
    return this.#store.orm.select().from(sessions).where(eq(sessions.id, id)).get() ?? null;
  }

  setPolicy(id: string, policy: string): void {
    this.#store.orm.update(sessions).set({ policy }).where(eq(sessions.id, id)).run();
  }

  setClosed(id: string, closedAt: number): void {
    this.#store.orm.update(sessions).set({ closedAt }).where(eq(sessions.id, id)).run();
  }
}
