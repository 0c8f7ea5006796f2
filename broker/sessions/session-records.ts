/**
 * Session rows in the store: opened with an id, a workspace and a policy;
 * reopening an id keeps its row (and its preferences). Groundwork for issue 5.
 */
import { eq } from "drizzle-orm";
import * as v from "valibot";
import type { SessionPolicy } from "../caps/policy.js";
import type { Store } from "../store/open.js";
import { sessions } from "../store/schema.js";

export const SessionId = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, "expected a session id: letters, digits, . _ : -, at most 128, starting with a letter or digit"));

const StoredPolicy = v.object({ offline: v.optional(v.boolean()), allow: v.optional(v.array(v.string())) });

export interface SessionRecord {
  readonly id: string;
  readonly workspace: string;
  readonly policy: SessionPolicy;
  readonly openedAt: number;
  readonly closedAt: number | null;
}

export class SessionRecords {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Opens (or reopens) a session; the workspace and policy are replaced by what is given. */
  open(id: string, workspace: string, policy: SessionPolicy = {}): SessionRecord {
    const checked = v.parse(SessionId, id);
    const text = JSON.stringify(v.parse(StoredPolicy, policy));
    this.#store.orm
      .insert(sessions)
      .values({ id: checked, workspace, policy: text, openedAt: Date.now() })
      .onConflictDoUpdate({ target: sessions.id, set: { workspace, policy: text, closedAt: null } })
      .run();
    return this.get(checked)!;
  }

  get(id: string): SessionRecord | null {
    const row = this.#store.orm.select().from(sessions).where(eq(sessions.id, id)).get();
    if (row === undefined) return null;
    const parsed = v.safeParse(StoredPolicy, JSON.parse(row.policy));
    // A policy that no longer parses is the most restrictive one.
    const policy: SessionPolicy = parsed.success ? parsed.output : { offline: true };
    return { id: row.id, workspace: row.workspace, policy, openedAt: row.openedAt, closedAt: row.closedAt ?? null };
  }

  setPolicy(id: string, policy: SessionPolicy): void {
    this.#store.orm.update(sessions).set({ policy: JSON.stringify(v.parse(StoredPolicy, policy)) }).where(eq(sessions.id, id)).run();
  }

  close(id: string): void {
    this.#store.orm.update(sessions).set({ closedAt: Date.now() }).where(eq(sessions.id, id)).run();
  }
}
