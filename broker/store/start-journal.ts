/**
 * The ledger's start journal: one line appended per invocation start before
 * the call reaches its satellite, so a start survives a crash of the broker
 * without a database commit on the call's path. The ledger inserts the rows
 * in its next batch and then empties the journal; a journal whose process is
 * gone is read at the next open and its starts recorded as `lost`.
 *
 * One file per open ledger, named after its process ("pid_starttime_nonce"),
 * so a live broker's journal is never read as a dead one's. The starts held
 * so far are written together, in one write(2) to a file opened O_APPEND,
 * before any frame leaves for a satellite (the connection calls `write`
 * first: `SatelliteSpec.beforeSend`; a turn's first frame leaves at once, the
 * rest at the turn's end) or at the turn's end; in the page cache once it
 * returns: a kill -9 after it cannot lose it, only power loss can (as with
 * the database's synchronous=NORMAL commits). A start still held when the
 * broker dies had not reached any satellite. A line torn by a kill during the
 * write is skipped at replay: that call had not been sent yet.
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { ownerAlive } from "./process-identity.js";

/** What a start needs for its row: id, session, extension, kind, name, strand, started at, hooks bypassed. */
export type JournalStart = readonly [number, string, string, string, string, string, number, boolean];

const text = v.pipe(v.string(), v.maxLength(4096));
const StartLine = v.tuple([
  v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  text,
  text,
  text,
  text,
  text,
  v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
  v.boolean(),
]);

/** A line longer than this was not written by a journal (every field is bounded above). */
const MAX_LINE = 6 * 4096;
const SUFFIX = ".journal";

/** "pid:starttime" of the process a journal file belongs to, from its name. */
function ownerOf(file: string): string | null {
  const m = /^(\d+)_(\d+|\?)_[0-9a-f]+\.journal$/.exec(file);
  return m === null ? null : `${m[1]}:${m[2]}`;
}

export class StartJournal {
  readonly #path: string;
  #fd: number | null;
  /** Lines of the starts appended since the last write, not yet written. */
  #held = "";
  #writeSoon = false;
  /** Bytes of an earlier write that did not go out (a full disk): written first next time. */
  #unwritten: Buffer | null = null;
  readonly #endOfTurn = (): void => {
    this.#writeSoon = false;
    try {
      this.write();
    } catch {
      // Kept: the next frame's write tries again (a turn's first frame waits for the turn's end if it cannot).
    }
  };

  private constructor(path: string, fd: number) {
    this.#path = path;
    this.#fd = fd;
  }

  /** Opens a new journal for this process in `dir` (made if missing). */
  static open(dir: string, self: string): StartJournal {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `${self.replace(":", "_")}_${randomBytes(6).toString("hex")}${SUFFIX}`);
    const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_EXCL, 0o600);
    return new StartJournal(path, fd);
  }

  /** Records a start: written with the others held by the next `write`, before any of them is sent. */
  append(start: JournalStart): void {
    if (this.#fd === null) throw new Error("the ledger's start journal is closed");
    this.#held += `${JSON.stringify(start)}\n`;
    if (this.#writeSoon) return;
    this.#writeSoon = true;
    setImmediate(this.#endOfTurn);
  }

  /**
   * Writes the starts held so far: one write(2). Called before a frame leaves
   * for a satellite; throws when the file cannot take them (what is left is
   * kept, so no line is torn by a retry).
   */
  write(): void {
    if (this.#fd === null || (this.#held.length === 0 && this.#unwritten === null)) return;
    const fresh = Buffer.from(this.#held);
    const bytes = this.#unwritten === null ? fresh : Buffer.concat([this.#unwritten, fresh]);
    this.#held = "";
    this.#unwritten = null;
    let at = 0;
    try {
      while (at < bytes.length) at += writeSync(this.#fd, bytes, at);
    } catch (err) {
      this.#unwritten = bytes.subarray(at);
      throw err;
    }
  }

  /** Forgets every start appended so far, held or written: their rows are committed. */
  clear(): void {
    this.#held = "";
    this.#unwritten = null;
    if (this.#fd !== null) ftruncateSync(this.#fd, 0);
  }

  /** Closes and removes the journal (every start it held is committed). */
  close(): void {
    if (this.#fd === null) return;
    closeSync(this.#fd);
    this.#fd = null;
    try {
      unlinkSync(this.#path);
    } catch {
      // Already gone: nothing was left in it to read.
    }
  }

  /**
   * The starts left in the journals in `dir` of processes that are gone (a
   * torn or foreign line is skipped), and a function that removes those files
   * once their starts are committed.
   */
  static orphans(dir: string): { starts: JournalStart[]; remove(): void } {
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith(SUFFIX));
    } catch {
      return { starts: [], remove: () => {} };
    }
    const dead = files.filter((f) => {
      const owner = ownerOf(f);
      return owner !== null && !ownerAlive(owner);
    });
    const starts: JournalStart[] = [];
    for (const file of dead) {
      let body: string;
      try {
        body = readFileSync(join(dir, file), "utf8");
      } catch {
        continue; // Another broker opening this home replayed and removed it.
      }
      for (const line of body.split("\n")) {
        if (line.length === 0 || line.length > MAX_LINE) continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          continue; // The last line of a journal whose process died writing it.
        }
        const checked = v.safeParse(StartLine, parsed);
        if (checked.success) starts.push(checked.output);
      }
    }
    const remove = (): void => {
      for (const file of dead) {
        try {
          unlinkSync(join(dir, file));
        } catch {
          // Removed by another broker opening this home at the same time.
        }
      }
    };
    return { starts, remove };
  }
}
