/**
 * The stand-in broker: it takes the place of the satellite's channel
 * (`cap/invocation.ts` sends every `cap` frame to whatever is attached), so
 * `@tether/cap` calls in a test reach in-memory fakes instead of a socket. It
 * checks each frame as the broker does — the wire's schema, the open
 * invocation's token — and answers with the broker's codes and wording.
 */
import * as v from "valibot";
import { Cap, describeIssues } from "../../wire/frames.js";
import { attach, settle } from "../../cap/invocation.js";
import type { FakeKv } from "./kv.js";
import type { FakeNet } from "./net.js";
import type { FakeDb } from "./db.js";
import { FakeSearch } from "./search.js";
import { FakeModel } from "./model.js";
import { FakeActs } from "./acts.js";
import { refused, type CapReply } from "./reply.js";
import { Rate } from "../../wire/rate.js";

/** One `log.write` line as the broker's log received it. */
export interface LogLine {
  readonly level: string;
  readonly msg: string;
}

// The broker's rates and bounds for best-effort capabilities (broker/caps/log.ts, report.ts, rate.ts).
const LOGS_PER_SECOND = 20;
const REPORTS_PER_SECOND = 50;
const MAX_TEXT = 4096;
const LogArgs = v.object({
  level: v.optional(v.picklist(["debug", "info", "warn", "error"]), "info"),
  msg: v.pipe(v.string(), v.maxLength(65_536)),
});
const ReportArgs = v.object({ text: v.pipe(v.string(), v.maxLength(65_536)) });

export class StandIn {
  readonly logs: LogLine[] = [];
  readonly reports: string[] = [];
  /** Partials and log lines dropped past the broker's rates. */
  dropped = 0;
  #token: string | null = null;
  #logRate = new Rate(LOGS_PER_SECOND);
  #reportRate = new Rate(REPORTS_PER_SECOND);

  constructor(
    readonly kv: FakeKv,
    readonly net: FakeNet,
    /** The `db` (made at its first use: an extension that stores nothing there needs no SQLite). */
    readonly db: () => FakeDb = () => {
      throw new Error("this kit has no db");
    },
    /** `search.query`: the session's providers as the test scripts them (./search.ts). */
    readonly search: FakeSearch = new FakeSearch(),
    /** `model.complete`: the providers and the `[model]` budget as the test scripts them (./model.ts). */
    readonly model: FakeModel = new FakeModel(),
    /** `act.before`/`act.after`: the session's hooks as the test scripts them (./acts.ts). */
    readonly acts: FakeActs = new FakeActs(),
  ) {}

  /** Takes the channel's place: from now on every capability call in this process comes here. */
  attach(): void {
    attach(this);
  }

  /** An invocation opens under `token`: only calls carrying it are served (rates are per invocation). */
  open(token: string): void {
    this.#token = token;
    this.#logRate = new Rate(LOGS_PER_SECOND);
    this.#reportRate = new Rate(REPORTS_PER_SECOND);
  }

  close(): void {
    this.#token = null;
  }

  /** What the channel would write: here, one capability call answered by the fakes. */
  async send(frame: object): Promise<void> {
    const id = (frame as { id?: unknown }).id;
    const reply = await this.#serve(frame);
    if (typeof id === "number") settle({ t: "cap_result", id, ...reply });
  }

  async #serve(frame: object): Promise<CapReply> {
    const checked = v.safeParse(Cap, frame);
    // The broker stops a satellite that sends a malformed frame; its open call is answered `crashed`.
    if (!checked.success)
      return {
        ok: false,
        error: {
          code: "crashed",
          msg: `Bad 'cap' frame: ${describeIssues(checked.issues)}; the broker stopped the satellite`,
        },
      };
    const { cap, token } = checked.output;
    if (this.#token === null || token !== this.#token) {
      return {
        ok: false,
        error: {
          code: "token_revoked",
          msg:
            `Capability '${cap.slice(0, 64)}' carried a token that is not the open invocation's (called after ` +
            `its answer, or with a stale or forged token); it is refused`,
        },
      };
    }
    let args: unknown;
    try {
      args = JSON.parse(checked.output.args);
    } catch {
      return refused("bad_arguments", "args", `Capability '${cap.slice(0, 64)}' arguments are not JSON`);
    }
    if (cap.startsWith("kv.") || cap.startsWith("skv.")) return this.kv.serve(cap, args);
    if (cap === "net.fetch") return this.net.serve(args);
    if (cap === "db.query" || cap === "db.exec") return this.db().serve(cap, args);
    if (cap === "search.query") return this.search.serve(args);
    if (cap === "act.before" || cap === "act.after") return this.acts.serve(cap, args);
    if (cap === "model.complete") return this.model.serve(args);
    if (cap === "log") {
      const parsed = v.safeParse(LogArgs, args);
      if (!parsed.success) return refused("bad_arguments", "args", "log takes {level, msg}");
      if (!this.#logRate.take())
        return this.#drop("rate:log", `log: more than ${LOGS_PER_SECOND} lines a second; dropped`);
      this.logs.push({ level: parsed.output.level, msg: parsed.output.msg.slice(0, MAX_TEXT) });
      return { ok: true, value: null };
    }
    if (cap === "report.emit") {
      const parsed = v.safeParse(ReportArgs, args);
      if (!parsed.success) return refused("bad_arguments", "args", "report.emit takes {text}");
      if (!this.#reportRate.take())
        return this.#drop(
          "rate:report",
          `report.emit: more than ${REPORTS_PER_SECOND} partials a second; this one was dropped`,
        );
      this.reports.push(parsed.output.text.slice(0, MAX_TEXT));
      return { ok: true, value: null };
    }
    return refused("denied", "unknown-capability", `There is no capability '${cap.slice(0, 64)}'`);
  }

  #drop(rule: string, msg: string): CapReply {
    this.dropped++;
    return refused("denied", rule, msg);
  }
}
