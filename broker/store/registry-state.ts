/**
 * What the installs and approvals are, as one string: read when another
 * connection committed (SQLite's data_version moved), so that a commit which
 * changed neither — another broker's ledger rows, its sessions, its kv —
 * tells this broker nothing. Read from the tables, not from a counter the
 * registry keeps: a writer that bypassed the registry (a hand edit, an older
 * broker) still changes it.
 */
import type { Store } from "./open.js";

/**
 * A reader of the registry's state: each install, and each extension's latest approval (the one
 * in force, or its revocation; older ones decide nothing). Prepared once; read only after another
 * connection's commit, and its cost grows with the installs, not with the approvals' history.
 */
export function registryStateReader(store: Store): () => string {
  const query = store.sqlite
    .prepare<[], string>(
      "select coalesce((select group_concat(row, char(10)) from (select name || ' ' || manifest_hash || ' ' || " +
        "artifact_hash || ' ' || artifact_path || ' ' || updated_at as row from installs order by name)), '') " +
        "|| char(30) || coalesce((select group_concat(row, char(10)) from (select id || ' ' || extension || ' ' || " +
        "manifest_hash || ' ' || artifact_hash || ' ' || coalesce(revoked_at, '-') || ' ' || grants as row " +
        "from approvals where id in (select max(id) from approvals group by extension) order by id)), '')",
    )
    .pluck();
  return () => query.get() as string;
}
