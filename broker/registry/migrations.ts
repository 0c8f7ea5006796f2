/**
 * An install's migrations as the operator reviews and approves them: the
 * ones its artifact pins (install/migrations.ts), their texts (kept with the
 * artifact's sources, checked against their hashes), which the database
 * already has, and what approving runs. Approving applies the pending ones
 * before the approval is recorded: a failure records nothing, so the
 * approval in force (if any) stays the latest and the database is untouched.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { asc, eq } from "drizzle-orm";
import { BrokerCode, TetherError } from "../base/errors.js";
import { MIGRATION_NAME, pinnedMigrations } from "../install/migrations.js";
import { runMigrationsBounded } from "../store/db-processes.js";
import { appliedCount } from "../store/applied-count.js";
import { MigrationFailure } from "../store/ext-migrations.js";
import type { HostJobSetup } from "../jail/host-job.js";
import type { Orm } from "../store/open.js";
import { extensionMigrations } from "../store/schema.js";
import { sourceContent } from "./artifact-records.js";
import { summarizeMigration } from "./migration-summary.js";
import type { Installed } from "./installed.js";

/** The store, or a transaction on it. */
type Db = Orm | Parameters<Parameters<Orm["transaction"]>[0]>[0];

export interface MigrationView {
  readonly number: number;
  readonly name: string;
  readonly sha256: string;
  readonly text: string;
  /** What it does, read from its text: "creates table notes; adds column notes.pinned". */
  readonly summary: string;
  /** When the database has it: when and by which version's approval (null: before the broker recorded it). */
  readonly applied: { readonly at: number | null; readonly version: string | null } | null;
}

export interface MigrationPlan {
  readonly migrations: readonly MigrationView[];
  /** The number of the last migration the database has. */
  readonly at: number;
  /** Why approving would fail before running anything (an edited or missing migration); [] when it can go ahead. */
  readonly problems: readonly string[];
}

/** The migrations `installed`'s artifact pins, with their texts; [] for an extension without [storage]. */
export function pinnedTexts(
  db: Db,
  installed: Installed,
): Array<{ number: number; name: string; sha256: string; text: string }> {
  if (installed.manifest.storage === undefined) return [];
  let code: string;
  try {
    code = readFileSync(installed.artifactPath, "utf8");
  } catch {
    throw new TetherError(
      BrokerCode.notApproved,
      `The artifact of '${installed.name}' is missing (${installed.artifactPath}). Run: tether ` +
        `install ${installed.sourceDir}`,
    );
  }
  if (createHash("sha256").update(code).digest("hex") !== installed.artifactHash) {
    throw new TetherError(
      BrokerCode.notApproved,
      `The artifact of '${installed.name}' was modified on disk. Run: tether install ${installed.sourceDir}`,
    );
  }
  const pinned = pinnedMigrations(code) ?? [];
  return pinned.map((m) => {
    const content = sourceContent(db, m.sha256);
    if (content === null || createHash("sha256").update(content).digest("hex") !== m.sha256) {
      throw new TetherError(
        BrokerCode.notApproved,
        `The text of migration ${m.name} of '${installed.name}' is not kept. Run: tether ` +
          `install ${installed.sourceDir}`,
      );
    }
    return {
      number: Number(MIGRATION_NAME.exec(m.name)![1]),
      name: m.name,
      sha256: m.sha256,
      text: content.toString("utf8"),
    };
  });
}

/** The migrations recorded as applied to `extension`'s database, by number. */
export function appliedMigrations(db: Db, extension: string): Map<number, typeof extensionMigrations.$inferSelect> {
  const rows = db
    .select()
    .from(extensionMigrations)
    .where(eq(extensionMigrations.extension, extension))
    .orderBy(asc(extensionMigrations.number))
    .all();
  return new Map(rows.map((r) => [r.number, r]));
}

/** What approving `installed` would do to its database. */
export function migrationPlan(db: Db, home: string, installed: Installed, jobs: HostJobSetup = {}): MigrationPlan {
  const texts = pinnedTexts(db, installed);
  const at =
    texts.length === 0 && installed.manifest.storage === undefined ? 0 : appliedCount(home, installed.name, jobs);
  const recorded = appliedMigrations(db, installed.name);
  const problems: string[] = [];
  if (at > texts.length) {
    problems.push(
      `its database has ${at} migrations but this version ships ${texts.length}: a migration is never undone, ` +
        `so install a version that ships all ${at} (and any new ones after them)`,
    );
  }
  const migrations = texts.map((m): MigrationView => {
    const row = recorded.get(m.number);
    const has = m.number <= at;
    if (has && row !== undefined && row.sha256 !== m.sha256) {
      problems.push(
        `migrations/${m.name} changed since it was applied (by ${row.version}'s approval): a migration is ` +
          `never edited once applied; restore it and put the change in a new migration ` +
          `(${String(texts.length + 1).padStart(4, "0")}_….sql)`,
      );
    }
    const applied = !has
      ? null
      : row === undefined || row.sha256 !== m.sha256
        ? { at: null, version: null }
        : { at: row.appliedAt, version: row.version };
    return { ...m, summary: summarizeMigration(m.text), applied };
  });
  return { migrations, at, problems };
}

/**
 * Applies the pending migrations of `installed` (all in one transaction) and
 * returns the rows to record with its approval. Throws a TetherError naming
 * the migration, the statement and SQLite's reason when one fails.
 */
export function applyPending(
  db: Db,
  home: string,
  installed: Installed,
  maxBytes: number,
  progress: (line: string) => void,
  jobs: HostJobSetup = {},
): Array<typeof extensionMigrations.$inferInsert> {
  const plan = migrationPlan(db, home, installed, jobs);
  const name = installed.name;
  if (plan.problems.length > 0)
    throw new TetherError(BrokerCode.migrationFailed, `Cannot approve '${name}': ${plan.problems.join("; ")}`);
  const pending = plan.migrations.filter((m) => m.applied === null);
  try {
    runMigrationsBounded(
      home,
      name,
      maxBytes,
      pending,
      (m) => progress(`applying migration ${m.name}: ${pending.find((p) => p.number === m.number)!.summary}`),
      jobs,
    );
  } catch (err) {
    if (!(err instanceof MigrationFailure)) throw err;
    throw new TetherError(
      BrokerCode.migrationFailed,
      `Cannot approve '${name}' ${installed.version}: ${err.message}. Nothing was applied (the database is as ` +
        `it was, at migration ${plan.at}) and the approval was not recorded; fix the migration, then tether ` +
        `install ${installed.sourceDir} and approve again`,
    );
  }
  // Every migration the database has now, recorded with this version where it was not (or was
  // applied before it was recorded).
  return plan.migrations
    .filter((m) => m.applied === null || m.applied.version === null)
    .map((m) => ({ extension: name, number: m.number, name: m.name, sha256: m.sha256, version: installed.version }));
}

/** Records what `applyPending` applied (in the approval's transaction). */
export function recordApplied(db: Db, rows: ReadonlyArray<typeof extensionMigrations.$inferInsert>): void {
  for (const row of rows) {
    db.insert(extensionMigrations)
      .values(row)
      .onConflictDoUpdate({ target: [extensionMigrations.extension, extensionMigrations.number], set: row })
      .run();
  }
}

/** Forgets what was applied to `extension`'s database (it was purged). */
export function forgetApplied(db: Db, extension: string): void {
  db.delete(extensionMigrations).where(eq(extensionMigrations.extension, extension)).run();
}
