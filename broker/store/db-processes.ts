/**
 * Extensions' SQL runs in processes of their own, never on the broker's
 * thread: one database process per extension (bin/tether-db.js →
 * db-child.ts), started at its first statement and stopped when idle. A
 * statement is answered by its process or, past the call's deadline, the
 * process is killed (SIGKILL: better-sqlite3 cannot be interrupted) and the
 * call refused with `storage.deadline`; the next statement starts a fresh
 * one, and SQLite's journal undoes what the killed one left half done. So an
 * extension's slow or greedy statement delays only its own database calls —
 * other extensions and the broker go on. Its memory is bounded too
 * (DB_DATA_BYTES). Migrations at approval run the same
 * way, in a process of their own, waited for with a time limit
 * (runMigrationsBounded).
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { decodeResult, encodeValue, type DbRequest, type DbResponse } from "./db-wire.js";
import type { DbResult, SqlParams } from "./ext-db.js";
import { MigrationFailure, type MigrationText } from "./ext-migrations.js";

const CHILD = resolve(dirname(fileURLToPath(import.meta.url)), "../../bin/tether-db.js");
/**
 * What a database process may allocate (RLIMIT_DATA, set by util-linux's
 * prlimit): SQLite then answers "out of memory" to a statement that wants
 * more. better-sqlite3 is built without memory statistics, so SQLite's own
 * `hard_heap_limit` does nothing; the kernel's limit does.
 */
export const DB_DATA_BYTES = 512 * 1024 * 1024;
const PRLIMIT = ["/usr/bin/prlimit", "/bin/prlimit"].find((p) => existsSync(p));

/** The command line of a database process: under prlimit where there is one. */
function childCommand(args: readonly string[]): [string, string[]] {
  const node = [process.execPath, CHILD, ...args];
  return PRLIMIT === undefined ? [node[0]!, node.slice(1)] : [PRLIMIT, [`--data=${DB_DATA_BYTES}`, "--", ...node]];
}
/** A database process with nothing to do for this long is stopped. */
const IDLE_MS = 30_000;
/** Migrations at approval get this long in all, by default. */
export const MIGRATION_DEADLINE_MS = 60_000;

interface Pending {
  readonly resolve: (result: DbResult) => void;
  readonly mode: "query" | "exec";
  readonly timer: NodeJS.Timeout;
}

/** One extension's database process. */
class DbProcess {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #pending = new Map<number, Pending>();
  #next = 1;
  #idle: NodeJS.Timeout | null = null;
  dead = false;

  constructor(private readonly onExit: () => void) {
    const [command, args] = childCommand([]);
    this.#child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: {} });
    this.#child.unref();
    this.#child.stderr.resume();
    createInterface({ input: this.#child.stdout }).on("line", (line) => {
      const response = JSON.parse(line) as DbResponse;
      const waiting = this.#pending.get(response.id);
      if (waiting === undefined) return;
      this.#pending.delete(response.id);
      clearTimeout(waiting.timer);
      waiting.resolve(decodeResult(response.result));
      this.#armIdle();
    });
    this.#child.on("exit", () => {
      this.dead = true;
      // Everything still waiting is answered: the process cannot answer it now.
      for (const [, waiting] of this.#pending) {
        clearTimeout(waiting.timer);
        waiting.resolve({ ok: false, kind: "refused", table: "", rule: "storage.process", msg: `db.${waiting.mode}: the database process stopped before it answered; try again` });
      }
      this.#pending.clear();
      if (this.#idle !== null) clearTimeout(this.#idle);
      this.onExit();
    });
    this.#child.stdin.on("error", () => {});
  }

  run(request: Omit<DbRequest, "id">, deadlineAt: number): Promise<DbResult> {
    if (this.#idle !== null) clearTimeout(this.#idle);
    const id = this.#next++;
    return new Promise((resolve) => {
      const late = () => {
        // Killing is the only way to stop a statement; the exit answers everything queued behind it too.
        this.#pending.delete(id);
        resolve({ ok: false, kind: "refused", table: "", rule: "storage.deadline", msg: `db.${request.mode}: the statement ran past the call's deadline and was stopped (nothing it changed was kept); add a LIMIT, an index or a bound` });
        this.kill();
      };
      const timer = setTimeout(late, Math.max(0, deadlineAt - Date.now()));
      this.#pending.set(id, { resolve, mode: request.mode, timer });
      this.#child.stdin.write(`${JSON.stringify({ ...request, id, params: encodeValue(request.params) })}\n`);
    });
  }

  #armIdle(): void {
    if (this.#pending.size > 0) return;
    this.#idle = setTimeout(() => this.#child.stdin.end(), IDLE_MS);
    this.#idle.unref();
  }

  kill(): void {
    if (this.dead) return;
    // Dead from now on: the next statement starts a fresh process rather than queue behind the exit.
    this.dead = true;
    this.#child.kill("SIGKILL");
  }
}

/** The database processes of a broker, one per extension. */
export class DbProcesses {
  readonly #live = new Map<string, DbProcess>();
  #closed = false;

  constructor(private readonly home: string) {}

  /** Runs one statement of `extension`'s (the allowlist was checked; it is checked again there), answered by `deadlineAt`. */
  run(extension: string, maxBytes: number, mode: "query" | "exec", sql: string, params: SqlParams | undefined, deadlineAt: number): Promise<DbResult> {
    if (this.#closed) return Promise.resolve({ ok: false, kind: "refused", table: "", rule: "storage.process", msg: `db.${mode}: the broker is closing` });
    let p = this.#live.get(extension);
    if (p === undefined || p.dead) {
      const made: DbProcess = new DbProcess(() => {
        if (this.#live.get(extension) === made) this.#live.delete(extension);
      });
      this.#live.set(extension, (p = made));
    }
    return p.run({ home: this.home, extension, maxBytes, mode, sql, ...(params !== undefined ? { params } : {}) }, deadlineAt);
  }

  /** Stops every database process now (what they were running is undone by SQLite's journal). */
  close(): void {
    this.#closed = true;
    for (const p of this.#live.values()) p.kill();
    this.#live.clear();
  }
}

/**
 * Runs migrations in a process of its own and waits for it (approval is
 * synchronous), killing it past `deadlineMs`; throws a MigrationFailure.
 */
export function runMigrationsBounded(home: string, extension: string, maxBytes: number, pending: readonly MigrationText[], starting: (m: MigrationText) => void, deadlineMs = MIGRATION_DEADLINE_MS): void {
  if (pending.length === 0) return;
  const [command, args] = childCommand(["migrate"]);
  const r = spawnSync(command, args, {
    input: JSON.stringify({ home, extension, maxBytes, pending }),
    timeout: deadlineMs,
    killSignal: "SIGKILL",
    encoding: "utf8",
    env: {},
    maxBuffer: 1024 * 1024,
  });
  const lines = (r.stdout ?? "").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>);
  let last: MigrationText | undefined;
  for (const line of lines) {
    if (typeof line.starting === "number") {
      last = pending.find((m) => m.number === line.starting);
      if (last !== undefined) starting(last);
    }
  }
  const end = lines.at(-1);
  if (end?.ok === true) return;
  if (end !== undefined && end.ok === false) throw new MigrationFailure(String(end.migration), Number(end.statement), String(end.sql), String(end.reason));
  const why = r.error !== undefined && /ETIMEDOUT/.test(String((r.error as NodeJS.ErrnoException).code)) ? `it ran past ${deadlineMs / 1000} s and was stopped` : `the migration process failed (${r.signal ?? `exit ${r.status}`}): ${(r.stderr ?? "").trim().split("\n").at(-1)?.slice(0, 200) ?? ""}`;
  throw new MigrationFailure(last?.name ?? pending[0]!.name, 0, "", why);
}
