/**
 * How many migrations an extension's database has, without opening it on the
 * host: SQLite keeps `PRAGMA user_version` as four big-endian bytes at offset
 * 60 of the file's header, which the broker reads as a number (no SQLite, no
 * parser). Only when a transaction was left half done (the journal is not
 * empty: the header may be a write that never committed) does SQLite answer,
 * in the database jail, after undoing it.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { HostJobSetup } from "../jail/host-job.js";
import { appliedCountJailed } from "./db-processes.js";
import { dbFile } from "./ext-db.js";

const HEADER = Buffer.from("SQLite format 3\0", "latin1");

/** The number of the last migration the database has (0: none, or no database yet). */
export function appliedCount(home: string, extension: string, setup: HostJobSetup = {}): number {
  const file = dbFile(home, extension);
  if (!existsSync(file)) return 0;
  const journal = `${file}-journal`;
  if (existsSync(journal) && statSync(journal).size > 0) return appliedCountJailed(home, extension, setup);
  const header = Buffer.alloc(100);
  const fd = openSync(file, "r");
  let read: number;
  try {
    read = readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  // An empty file (created, never written) has no migrations; anything else must be a database.
  if (read === 0) return 0;
  if (read < 100 || !header.subarray(0, 16).equals(HEADER)) throw new Error(`${file} is not an SQLite database`);
  const count = header.readInt32BE(60);
  // The broker's own pragma writes it; a negative one is a file written past SQLite.
  if (count < 0) throw new Error(`${file}: its migration count (${count}) is not one the broker wrote`);
  return count;
}
