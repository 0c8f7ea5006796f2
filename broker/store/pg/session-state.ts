/**
 * A session's state in the fleet: what it is (workspace, policy), its
 * per-session preferences, its compaction folds and its strategy and provider
 * preferences. (Its extensions' per-session storage, `skv`, is not shipped:
 * on a fleet's host it is read and written in the fleet's tables directly —
 * `fleet-kv.ts` — so the quota holds across hosts.) The host that
 * holds a session's lease works on its own store's rows and ships them here
 * (`shipSession`: the session's rows replaced whole, in one transaction); a
 * host that opens the session pulls them first (`pullSession`), so a session
 * reopened on another host — after a close, or after its host died and the
 * lease expired — has what its last shipment held.
 *
 * A fold's id is the store's own row number and is not carried over: each
 * store numbers the folds it holds (their order is by compaction and range).
 */
import { createHash } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import type { Store } from "../open.js";
import * as lite from "../schema.js";
import type { PgStore } from "./open.js";
import * as fleetSchema from "./schema.js";

type LiteRows = {
  sessions: Array<typeof lite.sessions.$inferSelect>;
  preferences: Array<typeof lite.preferences.$inferSelect>;
  folds: Array<Omit<typeof lite.folds.$inferSelect, "id">>;
  strategyPreferences: Array<typeof lite.strategyPreferences.$inferSelect>;
  providerPreferences: Array<typeof lite.providerPreferences.$inferSelect>;
  searchPreferences: Array<typeof lite.searchPreferences.$inferSelect>;
};

/** The session's rows in this host's store. */
export function sessionRows(local: Store, id: string): LiteRows {
  const orm = local.orm;
  return {
    sessions: orm.select().from(lite.sessions).where(eq(lite.sessions.id, id)).all(),
    preferences: orm.select().from(lite.preferences).where(eq(lite.preferences.scope, id)).all(),
    folds: orm
      .select()
      .from(lite.folds)
      .where(eq(lite.folds.sessionId, id))
      .orderBy(lite.folds.id)
      .all()
      .map(({ id: _id, ...fold }) => fold),
    strategyPreferences: orm
      .select()
      .from(lite.strategyPreferences)
      .where(eq(lite.strategyPreferences.sessionId, id))
      .all(),
    providerPreferences: orm
      .select()
      .from(lite.providerPreferences)
      .where(eq(lite.providerPreferences.sessionId, id))
      .all(),
    searchPreferences: orm.select().from(lite.searchPreferences).where(eq(lite.searchPreferences.sessionId, id)).all(),
  };
}

/** A digest of the session's rows: a shipment is skipped when it has not moved. */
export function sessionDigest(rows: LiteRows): string {
  return createHash("sha256")
    .update(JSON.stringify(rows, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString("base64") : v)))
    .digest("hex");
}

/** Replaces the fleet's rows of session `id` with `rows` (read from the holder's store). */
/** A write of a session's state by a host that no longer holds its lease: refused by the database. */
export class LeaseLostError extends Error {}

export async function shipSession(fleet: PgStore, id: string, rows: LiteRows, holder: string): Promise<void> {
  await fleet.orm.transaction(async (tx) => {
    // Fenced: only the lease's holder writes the session's state (a
    // host that lost it, frozen past its lease, writes nothing).
    const held = await tx.execute(
      sql`SELECT 1 FROM session_leases WHERE session_id = ${id} AND host = ${holder} FOR SHARE`,
    );
    if (held.rows.length === 0)
      throw new LeaseLostError(`session ${id}: this host no longer holds its lease; its state was not shipped`);
    await tx.delete(fleetSchema.sessions).where(eq(fleetSchema.sessions.id, id));
    await tx.delete(fleetSchema.preferences).where(eq(fleetSchema.preferences.scope, id));
    await tx.delete(fleetSchema.folds).where(eq(fleetSchema.folds.sessionId, id));
    await tx.delete(fleetSchema.strategyPreferences).where(eq(fleetSchema.strategyPreferences.sessionId, id));
    await tx.delete(fleetSchema.providerPreferences).where(eq(fleetSchema.providerPreferences.sessionId, id));
    await tx.delete(fleetSchema.searchPreferences).where(eq(fleetSchema.searchPreferences.sessionId, id));
    if (rows.sessions.length > 0) await tx.insert(fleetSchema.sessions).values(rows.sessions);
    if (rows.preferences.length > 0) await tx.insert(fleetSchema.preferences).values(rows.preferences);
    if (rows.folds.length > 0) await tx.insert(fleetSchema.folds).values(rows.folds);
    if (rows.strategyPreferences.length > 0)
      await tx.insert(fleetSchema.strategyPreferences).values(rows.strategyPreferences);
    if (rows.providerPreferences.length > 0)
      await tx.insert(fleetSchema.providerPreferences).values(rows.providerPreferences);
    if (rows.searchPreferences.length > 0)
      await tx.insert(fleetSchema.searchPreferences).values(rows.searchPreferences);
  });
}

/**
 * Makes this host's rows of session `id` the fleet's, when the fleet has the
 * session; a session the fleet has never seen keeps what this host has.
 * Returns whether the fleet had it.
 */
export async function pullSession(fleet: PgStore, local: Store, id: string): Promise<boolean> {
  const orm = fleet.orm;
  const [sessions, preferences, folds, strategyPreferences, providerPreferences] = await Promise.all([
    orm.select().from(fleetSchema.sessions).where(eq(fleetSchema.sessions.id, id)),
    orm.select().from(fleetSchema.preferences).where(eq(fleetSchema.preferences.scope, id)),
    orm.select().from(fleetSchema.folds).where(eq(fleetSchema.folds.sessionId, id)).orderBy(fleetSchema.folds.id),
    orm.select().from(fleetSchema.strategyPreferences).where(eq(fleetSchema.strategyPreferences.sessionId, id)),
    orm.select().from(fleetSchema.providerPreferences).where(eq(fleetSchema.providerPreferences.sessionId, id)),
  ]);
  const searchPreferences = await orm
    .select()
    .from(fleetSchema.searchPreferences)
    .where(eq(fleetSchema.searchPreferences.sessionId, id));
  if (sessions.length === 0) return false;
  local.orm.transaction((tx) => {
    tx.delete(lite.sessions).where(eq(lite.sessions.id, id)).run();
    tx.delete(lite.preferences).where(eq(lite.preferences.scope, id)).run();
    tx.delete(lite.folds).where(eq(lite.folds.sessionId, id)).run();
    tx.delete(lite.strategyPreferences).where(eq(lite.strategyPreferences.sessionId, id)).run();
    tx.delete(lite.providerPreferences).where(eq(lite.providerPreferences.sessionId, id)).run();
    tx.delete(lite.searchPreferences).where(eq(lite.searchPreferences.sessionId, id)).run();
    for (const row of sessions) tx.insert(lite.sessions).values(row).run();
    for (const row of preferences) tx.insert(lite.preferences).values(row).run();
    for (const { id: _id, ...row } of folds) tx.insert(lite.folds).values(row).run();
    for (const row of strategyPreferences) tx.insert(lite.strategyPreferences).values(row).run();
    for (const row of providerPreferences) tx.insert(lite.providerPreferences).values(row).run();
    for (const row of searchPreferences) tx.insert(lite.searchPreferences).values(row).run();
  });
  return true;
}
