/**
 * Session rows in the store: opened with an id, a workspace and a policy;
 * reopening an id keeps its row (and its preferences). Groundwork for issue 5.
 */
import * as v from "valibot";
import type { SessionPolicy } from "../caps/policy.js";
import type { Store } from "../store/open.js";
import { SessionRecordsRepository } from "../store/session-records-repository.js";

export const SessionId = v.pipe(
  v.string(),
  v.regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    "expected a session id: letters, digits, . _ : -, at most 128, starting with a letter or digit",
  ),
);

const StoredPolicy = v.object({ offline: v.optional(v.boolean()), allow: v.optional(v.array(v.string())) });

export interface SessionRecord {
  readonly id: string;
  readonly workspace: string;
  readonly policy: SessionPolicy;
  readonly openedAt: number;
  readonly closedAt: number | null;
}

export class SessionRecords {
  readonly #rows: SessionRecordsRepository;

  constructor(store: Store) {
    this.#rows = new SessionRecordsRepository(store);
  }

  /** Opens (or reopens) a session; the workspace and policy are replaced by what is given. */
  open(id: string, workspace: string, policy: SessionPolicy = {}): SessionRecord {
    const checked = v.parse(SessionId, id);
    const text = JSON.stringify(v.parse(StoredPolicy, policy));
    this.#rows.upsert(checked, workspace, text);
    return this.get(checked)!;
  }

  get(id: string): SessionRecord | null {
    const row = this.#rows.get(id);
    if (row === null) return null;
    const parsed = v.safeParse(StoredPolicy, JSON.parse(row.policy));
    // A policy that no longer parses is the most restrictive one.
    const policy: SessionPolicy = parsed.success ? parsed.output : { offline: true };
    return { id: row.id, workspace: row.workspace, policy, openedAt: row.openedAt, closedAt: row.closedAt ?? null };
  }

  setPolicy(id: string, policy: SessionPolicy): void {
    this.#rows.setPolicy(id, JSON.stringify(v.parse(StoredPolicy, policy)));
  }

  close(id: string): void {
    this.#rows.setClosed(id, Date.now());
  }
}
