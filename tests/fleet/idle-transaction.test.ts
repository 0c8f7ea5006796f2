/**
 * A fleet host frozen in the middle of a transaction (SIGSTOP, swapped out)
 * must not hold its row locks past its lease: the host that takes its
 * sessions over updates the same rows (the frozen host's running calls,
 * marked lost), and would wait on them for as long as it stays frozen. Its
 * store's connections carry the lease as PostgreSQL's
 * idle_in_transaction_session_timeout (broker/store/pg/open.ts). On the run's
 * real PostgreSQL server: a connection that locked a row and went quiet is
 * ended by the server, the row is free to another connection, and the quiet
 * one's commit fails rather than landing late.
 */
import pg from "pg";
import { openPgStore, type PgStore } from "../../broker/store/pg/open.js";
import { freshDatabase } from "../support/pg-database.js";

let url: string;
let quiet: PgStore;
let other: pg.Client;

beforeAll(async () => {
  url = await freshDatabase("tether_idle_transaction");
  quiet = await openPgStore(url, { idleInTransactionMs: 400 });
  other = new pg.Client({ connectionString: url });
  await other.connect();
  await other.query("CREATE TABLE held (id int PRIMARY KEY, v int)");
  await other.query("INSERT INTO held VALUES (1, 0)");
});

afterAll(async () => {
  await other.end();
  await quiet.close();
});

test("the store's connections carry the bound", async () => {
  const { rows } = await quiet.pool.query<{ idle_in_transaction_session_timeout: string }>(
    "SHOW idle_in_transaction_session_timeout",
  );
  expect(rows[0]!.idle_in_transaction_session_timeout).toBe("400ms");
});

test("a transaction left quiet holding a row lock is ended: the row is free, the late commit fails", async () => {
  const frozen = await quiet.pool.connect();
  frozen.on("error", () => {}); // the server ends its connection
  await frozen.query("BEGIN");
  await frozen.query("UPDATE held SET v = 1 WHERE id = 1");
  // The other connection waits on the lock until the server ends the quiet transaction
  // (without the bound it would wait for ever: the guard below fails the test).
  const guard = new Promise<never>((_, reject) => {
    const timer = setTimeout(() => reject(new Error("the row stayed locked")), 20_000);
    timer.unref();
  });
  const taken = await Promise.race([other.query("UPDATE held SET v = 2 WHERE id = 1 RETURNING v"), guard]);
  expect(taken.rows).toEqual([{ v: 2 }]);
  await expect(frozen.query("COMMIT")).rejects.toThrow();
  frozen.release(true);
  expect((await other.query("SELECT v FROM held WHERE id = 1")).rows).toEqual([{ v: 2 }]);
});
