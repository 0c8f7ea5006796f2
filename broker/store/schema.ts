/**
 * The store's tables, defined once with drizzle. `drizzle-kit generate` turns
 * changes here into SQL migrations in drizzle/ (see docs/operators.md).
 */
import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

const now = sql`(unixepoch('subsec') * 1000)`;

/** One row per installed extension: the manifest as installed and its artifact. */
export const installs = sqliteTable("installs", {
  name: text("name").primaryKey(),
  version: text("version").notNull(),
  description: text("description").notNull(),
  manifestText: text("manifest_text").notNull(),
  manifestHash: text("manifest_hash").notNull(),
  artifactPath: text("artifact_path").notNull(),
  artifactHash: text("artifact_hash").notNull(),
  sourceDir: text("source_dir").notNull(),
  installedAt: integer("installed_at").notNull().default(now),
  updatedAt: integer("updated_at").notNull().default(now),
});

/** Operator approvals, pinned to a manifest hash; the grants may be narrower than requested. */
export const approvals = sqliteTable(
  "approvals",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    extension: text("extension").notNull(),
    manifestHash: text("manifest_hash").notNull(),
    artifactHash: text("artifact_hash").notNull(),
    /** JSON: the grants as approved (net rules, tools, hooks, limits). */
    grants: text("grants").notNull(),
    approvedBy: text("approved_by").notNull(),
    approvedAt: integer("approved_at").notNull().default(now),
    revokedAt: integer("revoked_at"),
    /**
     * Who revoked it (`tether revoke`, the console, an uninstall), or who approved what
     * replaced it; null while in force, and for revocations recorded before it was kept.
     */
    revokedBy: text("revoked_by"),
    /**
     * JSON: requested egress rules this approval left out (`--only`);
     * a later approval keeps them out unless told `--all`.
     */
    withheldNet: text("withheld_net").notNull().default("[]"),
    /**
     * A fleet's approval: an operator key's signature over it
     * (`<key id>:<base64url>`; fleet-trust/signed-approvals.ts); null on a single broker.
     */
    signature: text("signature"),
    /**
     * A fleet's revocation: an operator key's signature over it; null while
     * in force, or when revoked unsigned (replaced, an older broker).
     */
    revocationSignature: text("revocation_signature"),
  },
  (t) => [index("approvals_extension").on(t.extension)],
);

/**
 * What each installed artifact was built from: its size and the files of the
 * extension folder the bundle read (manifest.toml included), so a review can say
 * which sources an upgrade changed. Kept while an install or an extension's
 * latest approval names the artifact.
 */
export const artifacts = sqliteTable(
  "artifacts",
  {
    extension: text("extension").notNull(),
    artifactHash: text("artifact_hash").notNull(),
    bytes: integer("bytes").notNull(),
    /** JSON: [{ path, sha256, bytes }], by path. */
    sources: text("sources").notNull(),
    sourceDir: text("source_dir").notNull(),
    createdAt: integer("created_at").notNull().default(now),
  },
  (t) => [primaryKey({ columns: [t.extension, t.artifactHash] })],
);

/** The contents of those source files, by hash, for `tether review --diff` (one row per distinct content). */
export const sourceFiles = sqliteTable("source_files", {
  sha256: text("sha256").primaryKey(),
  content: blob("content", { mode: "buffer" }).notNull(),
});

/** Enabled or not, globally (scope "global") or per session (scope = session id). */
export const preferences = sqliteTable(
  "preferences",
  {
    scope: text("scope").notNull(),
    extension: text("extension").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    updatedAt: integer("updated_at").notNull().default(now),
  },
  (t) => [primaryKey({ columns: [t.scope, t.extension] })],
);

export const sessions = sqliteTable("sessions", {
  id: text("id").primaryKey(),
  workspace: text("workspace").notNull(),
  /** JSON: the session's policy (offline, narrower allow list). */
  policy: text("policy").notNull().default("{}"),
  openedAt: integer("opened_at").notNull().default(now),
  closedAt: integer("closed_at"),
});

/**
 * The invocation ledger: one row per call into a satellite. A start is
 * appended to the ledger's start journal on the call's path (store/start-journal.ts:
 * a started call survives a crash as `lost`) and its row inserted with the
 * next batch, under an id reserved ahead (ledgerReservations), so ids are
 * unique across processes but not committed in id order; `seq` is the order
 * rows were committed in (the fleet's shipper follows it). Rows are never
 * deleted, so ids never repeat. Readers go newest first by id and stop at
 * their limit (store/audit-queries.ts).
 */
export const invocations = sqliteTable(
  "invocations",
  {
    id: integer("id").primaryKey(),
    sessionId: text("session_id").notNull(),
    extension: text("extension").notNull(),
    kind: text("kind").notNull(),
    name: text("name").notNull(),
    strand: text("strand").notNull().default(""),
    startedAt: integer("started_at").notNull(),
    finishedAt: integer("finished_at"),
    durationMs: integer("duration_ms"),
    /** "ok" or the error code. */
    outcome: text("outcome").notNull(),
    /** The broker process that runs it ("pid:starttime"), so only a dead broker's rows become lost. */
    owner: text("owner"),
    /**
     * The operator bypassed the hook bus for this call
     * (`tether call --no-hooks`): tool_call, tool_result and cap_call hooks were not asked.
     */
    hooksBypassed: integer("hooks_bypassed", { mode: "boolean" }).notNull().default(false),
    /** Commit order: one more than the highest committed before it (rows of before it was added: their id). */
    seq: integer("seq"),
  },
  (t) => [
    index("invocations_seq").on(t.seq),
    // Only the rows still running: every open looks for those a dead broker left, and a home
    // keeps every call it ever made. Read with the literal (`outcome = 'running'`), not a parameter.
    index("invocations_running").on(t.id).where(sql`outcome = 'running'`),
  ],
);

/**
 * Invocation ids handed out ahead of their rows: each process reserves a block
 * (store/ledger.ts) so a call's start needs no write to this database.
 */
export const ledgerReservations = sqliteTable("ledger_reservations", {
  name: text("name").primaryKey(),
  /** The highest id reserved so far. */
  last: integer("last").notNull(),
});

/** The capability-call audit: every decision, allowed or denied, with the rule that decided. */
export const capAudit = sqliteTable(
  "cap_audit",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    invocationId: integer("invocation_id"),
    sessionId: text("session_id").notNull(),
    extension: text("extension").notNull(),
    capability: text("capability").notNull(),
    target: text("target").notNull().default(""),
    decision: text("decision", { enum: ["allowed", "denied"] }).notNull(),
    rule: text("rule").notNull(),
    bytes: integer("bytes").notNull().default(0),
    /** The secret the broker injected into this request, by name (never its value); null: none. */
    secret: text("secret"),
    at: integer("at").notNull(),
  },
  (t) => [index("cap_audit_extension").on(t.extension), index("cap_audit_at").on(t.at)],
);

/** Per-extension durable storage. */
export const kv = sqliteTable(
  "kv",
  {
    extension: text("extension").notNull(),
    key: text("key").notNull(),
    value: blob("value", { mode: "buffer" }).notNull(),
    /** "json" (UTF-8 JSON text) or "bytes". */
    encoding: text("encoding", { enum: ["json", "bytes"] })
      .notNull()
      .default("bytes"),
    updatedAt: integer("updated_at").notNull().default(now),
  },
  (t) => [primaryKey({ columns: [t.extension, t.key] })],
);

/**
 * Per-session storage of an extension (`skv.*`): its keys in one session, apart
 * from every other session's. Counted with its `kv` rows against one
 * `[limits] kv_bytes` quota.
 */
export const sessionKv = sqliteTable(
  "session_kv",
  {
    extension: text("extension").notNull(),
    sessionId: text("session_id").notNull(),
    key: text("key").notNull(),
    value: blob("value", { mode: "buffer" }).notNull(),
    /** "json" (UTF-8 JSON text) or "bytes". */
    encoding: text("encoding", { enum: ["json", "bytes"] })
      .notNull()
      .default("bytes"),
    updatedAt: integer("updated_at").notNull().default(now),
  },
  (t) => [primaryKey({ columns: [t.extension, t.sessionId, t.key] })],
);

/**
 * The hook bus's trace: one row per hook asked about one event (which
 * extension, what it answered, how long it took), so an operator can see why a
 * call was blocked or rewritten.
 */
export const hookTraces = sqliteTable(
  "hook_traces",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    sessionId: text("session_id").notNull(),
    event: text("event").notNull(),
    /** What the event was about: the tool name, "capability target", the command… */
    subject: text("subject").notNull().default(""),
    /** The ledger row the event was about (the tool call, the invocation making a capability call). */
    aboutInvocationId: integer("about_invocation_id"),
    /** The hook's own invocation row (null for the built-in command hooks, which run on the host). */
    hookInvocationId: integer("hook_invocation_id"),
    extension: text("extension").notNull(),
    /** proceed, block, rewrite, refused-rewrite, halt, result, context, notes, unhandled, failed, ignored. */
    answer: text("answer").notNull(),
    /** The block or halt reason, the failure, or the refused rewrite's problem (bounded). */
    detail: text("detail").notNull().default(""),
    durationMs: real("duration_ms").notNull(),
    at: integer("at").notNull(),
  },
  (t) => [index("hook_traces_session").on(t.sessionId), index("hook_traces_about").on(t.aboutInvocationId)],
);

/**
 * What compaction strategies folded: one row per fold (a range of the
 * conversation's messages, inclusive, and the text that stands for it). The
 * folds of one compaction share `compaction_id`, the strategy's invocation in
 * the ledger. Only a compaction whose answer was checked whole is stored.
 */
export const folds = sqliteTable(
  "folds",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    sessionId: text("session_id").notNull(),
    compactionId: integer("compaction_id").notNull(),
    strategy: text("strategy").notNull(),
    extension: text("extension").notNull(),
    fromIndex: integer("from_index").notNull(),
    toIndex: integer("to_index").notNull(),
    text: text("text").notNull(),
    createdAt: integer("created_at").notNull().default(now),
  },
  (t) => [index("folds_session").on(t.sessionId, t.compactionId)],
);

/** The compaction strategy a session prefers (by its `[[compaction]]` name); no row: the first active one. */
export const strategyPreferences = sqliteTable("strategy_preferences", {
  sessionId: text("session_id").primaryKey(),
  strategy: text("strategy").notNull(),
  updatedAt: integer("updated_at").notNull().default(now),
});

/**
 * How a session ranks and excludes model providers (by `[[provider]]` name),
 * as JSON arrays of names; no row: every eligible provider, in registry order.
 */
export const providerPreferences = sqliteTable("provider_preferences", {
  sessionId: text("session_id").primaryKey(),
  /** JSON: the names to try first, in order. */
  rank: text("rank").notNull(),
  /** JSON: the names this session never uses. */
  exclude: text("exclude").notNull(),
  updatedAt: integer("updated_at").notNull().default(now),
});

/**
 * How a session ranks and excludes search providers (by `[[search]]` name),
 * as JSON arrays of names; no row: its active extensions' providers in registry order.
 */
export const searchPreferences = sqliteTable("search_preferences", {
  sessionId: text("session_id").primaryKey(),
  /** JSON: the names to ask first, in order. */
  rank: text("rank").notNull(),
  /** JSON: the names this session never asks. */
  exclude: text("exclude").notNull(),
  updatedAt: integer("updated_at").notNull().default(now),
});

/**
 * The migrations applied to each extension's database (`[storage]`,
 * docs/migrations.md): the database's own `PRAGMA user_version` says how many ran
 * (it moves in the migrations' transaction); these rows say which texts, when
 * and under which approval, so an edited migration is caught.
 */
export const extensionMigrations = sqliteTable(
  "extension_migrations",
  {
    extension: text("extension").notNull(),
    number: integer("number").notNull(),
    name: text("name").notNull(),
    sha256: text("sha256").notNull(),
    appliedAt: integer("applied_at").notNull().default(now),
    /** The version whose approval applied it. */
    version: text("version").notNull(),
  },
  (t) => [primaryKey({ columns: [t.extension, t.number] })],
);

/**
 * Initializers (`[init]`, broker/init/initializers.ts): one row per approved
 * version an init was run for, keyed as the approval pins it (extension,
 * artifact hash, manifest hash). `ran_at` set: it succeeded, and is never run
 * again for that version; `failed_at` set (and `ran_at` null): its last run
 * failed with `error`, and a later broker start runs it again.
 */
export const extensionInits = sqliteTable(
  "extension_inits",
  {
    extension: text("extension").notNull(),
    artifactHash: text("artifact_hash").notNull(),
    manifestHash: text("manifest_hash").notNull(),
    /** The manifest version it initialized. */
    version: text("version").notNull(),
    ranAt: integer("ran_at"),
    /** What a successful init answered (`{ message }`), if anything. */
    message: text("message"),
    error: text("error"),
    failedAt: integer("failed_at"),
  },
  (t) => [primaryKey({ columns: [t.extension, t.artifactHash, t.manifestHash] })],
);
