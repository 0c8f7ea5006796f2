/**
 * Extensions' SQL runs in processes of their own, never on the broker's
 * thread: one database process per extension (db-child.ts, in its
 * database jail), started at its first statement and stopped when idle. A
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
import { chownSync, closeSync, mkdirSync, openSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { readLines } from "./bounded-lines.js";
import * as v from "valibot";
import {
  jobFailure,
  placed,
  runHostJobSync,
  startHostJob,
  type HostJob,
  type HostJobSetup,
  type RunningJob,
} from "../jail/host-job.js";
import { jailIdentity } from "../jail/identity.js";
import { jobScript } from "../jail/job-scripts.js";
import { resolveSandbox } from "../jail/sandbox.js";
import {
  DB_LINE_BYTES,
  DbResponseSchema,
  decodeResult,
  encodeValue,
  type DbRequest,
  type DbResponse,
} from "./db-wire.js";
import { dataDir, dbFile, type DbResult, type SqlParams } from "./ext-db.js";
import { MigrationFailure, type MigrationText } from "./ext-migrations.js";

/**
 * What a database process may allocate (RLIMIT_DATA and its cgroup's bound):
 * SQLite then answers "out of memory" to a statement that wants more.
 * better-sqlite3 is built without memory statistics, so SQLite's own
 * `hard_heap_limit` does nothing; the kernel's limit does.
 */
export const DB_DATA_BYTES = 512 * 1024 * 1024;
/** A database process with nothing to do for this long is stopped. */
const IDLE_MS = 30_000;
/** Migrations at approval get this long in all, by default. */
export const MIGRATION_DEADLINE_MS = 60_000;
/** Where the database jail shows the home: its database is `/tether/data/<name>.sqlite` there, and nothing else is. */
export const JAIL_HOME = "/tether";
const JAIL_ADDON = "/opt/tether/better_sqlite3.node";
/** Past the quota, what a journal and SQLite's last page may add (RLIMIT_FSIZE is per file). */
const FILE_SLACK_BYTES = 16 * 1024 * 1024;

let addon: string | undefined;
/** better-sqlite3's native addon, copied into the jail (the script bundles its JavaScript); found once. */
function sqliteAddon(): string {
  addon ??= realpathSync(createRequire(import.meta.url).resolve("better-sqlite3/build/Release/better_sqlite3.node"));
  return addon;
}

/** A jail for SQLite: Node with the broker's database script and better-sqlite3's addon, and `binds`. */
export function sqliteJob(
  label: string,
  binds: HostJob["binds"],
  args: readonly string[],
  fileBytes: number,
  setup: HostJobSetup,
): HostJob {
  const sandbox = resolveSandbox(setup.sandbox);
  return {
    label,
    runtime: "node",
    script: jobScript("db-child"),
    args: [`--addon=${placed(sandbox, { host: sqliteAddon(), jail: JAIL_ADDON })}`, ...args],
    binds: sandbox === "bwrap" ? binds : [],
    files: [{ host: sqliteAddon(), jail: JAIL_ADDON }],
    memoryBytes: DB_DATA_BYTES,
    tmpBytes: 16 * 1024 * 1024,
    fileBytes,
    jail: setup.jail ?? {},
    sandbox,
  };
}

/**
 * The database jail of one extension: Node with the broker's database script,
 * its database file and journal bound writable (by descriptor, created first,
 * the jail uid's) and nothing else of the host. The journal is kept in place
 * (journal_mode TRUNCATE, ext-db.ts): a bound file cannot be deleted.
 */
export function databaseJob(
  home: string,
  extension: string,
  maxBytes: number,
  setup: HostJobSetup,
  args: readonly string[],
): { job: HostJob; home: string } {
  const sandbox = resolveSandbox(setup.sandbox);
  const file = dbFile(home, extension);
  const identity = jailIdentity(setup.jail?.identity);
  if (sandbox === "bwrap") {
    mkdirSync(dataDir(home), { recursive: true, mode: 0o700 });
    for (const path of [file, `${file}-journal`]) {
      closeSync(openSync(path, "a", 0o600));
      if (identity !== null) chownSync(path, identity.uid, identity.gid);
    }
  }
  const jailFile = dbFile(JAIL_HOME, extension);
  const binds = [
    { host: file, jail: jailFile, writable: true },
    { host: `${file}-journal`, jail: `${jailFile}-journal`, writable: true },
  ];
  return {
    job: sqliteJob("database process", binds, args, maxBytes + FILE_SLACK_BYTES, setup),
    home: sandbox === "bwrap" ? JAIL_HOME : home,
  };
}

interface Pending {
  readonly resolve: (result: DbResult) => void;
  readonly mode: DbRequest["mode"];
  readonly timer: NodeJS.Timeout;
}

/** One extension's database process, in its database jail. */
class DbProcess {
  readonly #child: RunningJob;
  readonly #pending = new Map<number, Pending>();
  #next = 1;
  #idle: NodeJS.Timeout | null = null;
  dead = false;
  /** The home as the process sees it. */
  readonly home: string;
  readonly pid: number | undefined;

  constructor(
    home: string,
    extension: string,
    readonly maxBytes: number,
    setup: HostJobSetup,
    private readonly onExit: () => void,
  ) {
    const { job, home: seen } = databaseJob(home, extension, maxBytes, setup, []);
    this.home = seen;
    const started = startHostJob(job);
    this.#child = started.child;
    this.pid = started.child.pid;
    this.#child.exited.catch(() => {});
    this.#child.unref?.();
    this.#child.stderr?.resume();
    // Its answers are read like any input: one bounded JSON line each, checked; anything else ends the process.
    readLines(
      this.#child.stdout!,
      DB_LINE_BYTES,
      (line) => {
        let response: DbResponse;
        try {
          response = v.parse(DbResponseSchema, JSON.parse(line)) as DbResponse;
        } catch {
          this.kill();
          return;
        }
        const waiting = this.#pending.get(response.id);
        if (waiting === undefined) return;
        this.#pending.delete(response.id);
        clearTimeout(waiting.timer);
        waiting.resolve(decodeResult(response.result));
        this.#armIdle();
      },
      () => this.kill(),
    );
    this.#child.on("exit", () => {
      started.done();
      this.dead = true;
      // Everything still waiting is answered: the process cannot answer it now.
      for (const [, waiting] of this.#pending) {
        clearTimeout(waiting.timer);
        waiting.resolve({
          ok: false,
          kind: "refused",
          table: "",
          rule: "storage.process",
          msg: `db.${waiting.mode}: the database process stopped before it answered; try again`,
        });
      }
      this.#pending.clear();
      if (this.#idle !== null) clearTimeout(this.#idle);
      this.onExit();
    });
    this.#child.stdin?.on("error", () => {});
  }

  run(request: Omit<DbRequest, "id">, deadlineAt: number): Promise<DbResult> {
    if (this.#idle !== null) clearTimeout(this.#idle);
    const id = this.#next++;
    return new Promise((resolve) => {
      const late = () => {
        // Killing is the only way to stop a statement; the exit answers everything queued behind it too.
        this.#pending.delete(id);
        resolve({
          ok: false,
          kind: "refused",
          table: "",
          rule: "storage.deadline",
          msg:
            `db.${request.mode}: the statement ran past the call's deadline and was ` +
            `stopped (nothing it changed was kept); add a LIMIT, an index or a bound`,
        });
        this.kill();
      };
      const timer = setTimeout(late, Math.max(0, deadlineAt - Date.now()));
      this.#pending.set(id, { resolve, mode: request.mode, timer });
      this.#child.stdin?.write(
        `${JSON.stringify({ ...request, home: this.home, id, params: encodeValue(request.params) })}\n`,
      );
    });
  }

  #armIdle(): void {
    if (this.#pending.size > 0) return;
    this.#idle = setTimeout(() => this.#child.stdin?.end(), IDLE_MS);
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

  constructor(
    private readonly home: string,
    private readonly setup: HostJobSetup = {},
  ) {}

  /**
   * Runs one statement of `extension`'s (the allowlist was
   * checked; it is checked again there), answered by `deadlineAt`.
   */
  run(
    extension: string,
    maxBytes: number,
    mode: "query" | "exec",
    sql: string,
    params: SqlParams | undefined,
    deadlineAt: number,
  ): Promise<DbResult> {
    return this.#run(extension, maxBytes, { mode, sql, ...(params !== undefined ? { params } : {}) }, deadlineAt);
  }

  /** The kind and tables SQLite says `sql` would touch, without running it (`table` names them), by `deadlineAt`. */
  explain(
    extension: string,
    maxBytes: number,
    sql: string,
    params: SqlParams | undefined,
    deadlineAt: number,
  ): Promise<DbResult> {
    return this.#run(
      extension,
      maxBytes,
      { mode: "explain", sql, ...(params !== undefined ? { params } : {}) },
      deadlineAt,
    );
  }

  /**
   * The escape suite's door: a statement the database process runs without its
   * allowlist, as SQLite would after a bug that slipped past it — to show the jail
   * alone holds. Never reached from a capability (caps/db.ts calls `run`).
   */
  runUnchecked(
    extension: string,
    maxBytes: number,
    mode: "query" | "exec",
    sql: string,
    deadlineAt: number,
  ): Promise<DbResult> {
    return this.#run(extension, maxBytes, { mode, sql, unchecked: true }, deadlineAt);
  }

  /** The host pid of `extension`'s database process (its launcher, then bwrap), while one runs. */
  pidOf(extension: string): number | undefined {
    const p = this.#live.get(extension);
    return p === undefined || p.dead ? undefined : p.pid;
  }

  #run(
    extension: string,
    maxBytes: number,
    request: Pick<DbRequest, "mode" | "sql" | "params" | "unchecked">,
    deadlineAt: number,
  ): Promise<DbResult> {
    const mode = request.mode;
    if (this.#closed)
      return Promise.resolve({
        ok: false,
        kind: "refused",
        table: "",
        rule: "storage.process",
        msg: `db.${mode}: the broker is closing`,
      });
    let p = this.#live.get(extension);
    // A new quota (an approved upgrade) needs a process whose file-size bound allows it.
    if (p !== undefined && !p.dead && p.maxBytes !== maxBytes) p.kill();
    if (p === undefined || p.dead) {
      let made: DbProcess;
      try {
        made = new DbProcess(this.home, extension, maxBytes, this.setup, () => {
          if (this.#live.get(extension) === made) this.#live.delete(extension);
        });
      } catch (err) {
        return Promise.resolve({
          ok: false,
          kind: "refused",
          table: "",
          rule: "storage.process",
          msg: `db.${mode}: the database process could not start: ${(err as Error).message.slice(0, 200)}`,
        });
      }
      this.#live.set(extension, (p = made));
    }
    return p.run({ home: this.home, extension, maxBytes, ...request }, deadlineAt);
  }

  /** Stops every database process now (what they were running is undone by SQLite's journal). */
  close(): void {
    this.#closed = true;
    for (const p of this.#live.values()) p.kill();
    this.#live.clear();
  }
}

/**
 * Runs migrations in a database jail of their own and waits for it (approval
 * is synchronous), killing it past `deadlineMs`; throws a MigrationFailure.
 */
export function runMigrationsBounded(
  home: string,
  extension: string,
  maxBytes: number,
  pending: readonly MigrationText[],
  starting: (m: MigrationText) => void,
  setup: HostJobSetup = {},
  deadlineMs = MIGRATION_DEADLINE_MS,
): void {
  if (pending.length === 0) return;
  const { job, home: seen } = databaseJob(home, extension, maxBytes, setup, ["migrate"]);
  const r = runHostJobSync(job, JSON.stringify({ home: seen, extension, maxBytes, pending }), deadlineMs, 1024 * 1024);
  const lines = r.stdout
    .toString("utf8")
    .split("\n")
    .filter((l) => l !== "")
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  let last: MigrationText | undefined;
  for (const line of lines) {
    if (typeof line.starting === "number") {
      last = pending.find((m) => m.number === line.starting);
      if (last !== undefined) starting(last);
    }
  }
  const end = lines.at(-1);
  if (end?.ok === true) return;
  if (end !== undefined && end.ok === false)
    throw new MigrationFailure(String(end.migration), Number(end.statement), String(end.sql), String(end.reason));
  const why = r.timedOut ? `it ran past ${deadlineMs / 1000} s and was stopped` : jobFailure(job, r, deadlineMs);
  throw new MigrationFailure(last?.name ?? pending[0]!.name, 0, "", why);
}

/**
 * The number of the last migration `extension`'s database has, read by SQLite
 * in its database jail (it first undoes a transaction left half done).
 */
export function appliedCountJailed(home: string, extension: string, setup: HostJobSetup = {}): number {
  const { job, home: seen } = databaseJob(home, extension, 1024 * 1024 * 1024, setup, ["version"]);
  const r = runHostJobSync(job, JSON.stringify({ home: seen, extension }), MIGRATION_DEADLINE_MS, 1024);
  const answer = /^\{"version":(\d+)\}/.exec(r.stdout.toString("utf8"));
  if (answer === null)
    throw new Error(
      `Cannot read the migrations of ${extension}'s database: ${jobFailure(job, r, MIGRATION_DEADLINE_MS)}`,
    );
  return Number(answer[1]);
}
