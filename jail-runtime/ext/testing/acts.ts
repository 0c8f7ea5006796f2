/**
 * Reported acts in the test kit: `act.before` and `act.after` (what `ctx.act`
 * and `ctx.actBefore` call) answered as the session's hooks would, by what the
 * test says they answer — proceed, block, or rewrite the arguments before the
 * act; proceed or withhold the output after it — or refused as the broker
 * refuses an act the manifest does not declare. Every act is recorded.
 */
import * as v from "valibot";
import { ActAfterArgs, ActBeforeArgs, ACT_AFTER_USAGE, ACT_BEFORE_USAGE } from "../../wire/act-args.js";
import { refused, type CapReply } from "./reply.js";

/** What the hooks answer before an act: go ahead, block it (it does not run), or rewrite its arguments. */
export type FakeActVerdict =
  | "proceed"
  | { readonly block: string; readonly by?: string }
  | { readonly rewrite: unknown; readonly by?: string };

/** What the hooks answer after an act: let the output through, or withhold it. */
export type FakeActResultVerdict = "proceed" | { readonly withhold: string; readonly by?: string };

/** One act the extension reported. */
export interface FakeAct {
  readonly name: string;
  readonly callId: string;
  /** The arguments it reported. */
  readonly arguments: unknown;
  /** The arguments it was told to run with (a rewrite's), or undefined when it was blocked. */
  ran?: unknown;
  blockedBy?: string;
  /** Set once it ended: whether it succeeded, and its output (or its error, as `{name, message}`). */
  ok?: boolean;
  result?: unknown;
  withheldBy?: string;
}

export interface FakeActsOptions {
  /** The acts the manifest declares (`[[act]]` names); default any. Others are refused as the broker does. */
  readonly declared?: readonly string[];
  /** The session's `tool_call` hooks, per act name or as a function of the act; default proceed. */
  readonly before?:
    | Readonly<Record<string, FakeActVerdict>>
    | ((act: { readonly name: string; readonly arguments: unknown }) => FakeActVerdict);
  /** Its `tool_result` hooks, per act name or as a function of the ended act; default proceed. */
  readonly after?: Readonly<Record<string, FakeActResultVerdict>> | ((act: FakeAct) => FakeActResultVerdict);
  /** The extension's name, as a refusal names it. */
  readonly name?: string;
}

const HOOKS = "hooks";

export class FakeActs {
  /** Every act reported, in order. */
  readonly acts: FakeAct[] = [];
  readonly #options: FakeActsOptions;
  readonly #open = new Map<string, FakeAct>();
  #next = 1;

  constructor(options: FakeActsOptions = {}) {
    this.#options = options;
  }

  /** Answers one `act.before` or `act.after` as the broker would. */
  serve(cap: string, args: unknown): CapReply {
    if (cap === "act.before") return this.#before(args);
    if (cap === "act.after") return this.#after(args);
    return refused("denied", "unknown-capability", `There is no capability '${cap.slice(0, 64)}'`);
  }

  #before(raw: unknown): CapReply {
    const parsed = v.safeParse(ActBeforeArgs, raw);
    if (!parsed.success) return refused("bad_arguments", "args", ACT_BEFORE_USAGE);
    const { name, arguments: args } = parsed.output;
    const declared = this.#options.declared;
    if (declared !== undefined && !declared.includes(name))
      return refused(
        "denied",
        "act",
        `act.before: '${this.#options.name ?? "extension"}' does not declare the act '${name}'; add [[act]] ` +
          `name = "${name}" (with a description) to its manifest, install it again and have the operator approve it`,
      );
    const record: FakeAct = { name, callId: `act-${this.#next++}`, arguments: args };
    this.acts.push(record);
    const hooks = this.#options.before;
    const verdict = (typeof hooks === "function" ? hooks({ name, arguments: args }) : hooks?.[name]) ?? "proceed";
    if (typeof verdict === "object" && "block" in verdict) {
      record.blockedBy = verdict.by ?? HOOKS;
      return json({ call_id: record.callId, blocked: { reason: verdict.block, by: record.blockedBy } });
    }
    let by: string | null = null;
    record.ran = args;
    if (typeof verdict === "object" && "rewrite" in verdict) {
      record.ran = verdict.rewrite;
      by = verdict.by ?? HOOKS;
    }
    this.#open.set(record.callId, record);
    return json({ call_id: record.callId, arguments: record.ran, rewritten_by: by });
  }

  #after(raw: unknown): CapReply {
    const parsed = v.safeParse(ActAfterArgs, raw);
    if (!parsed.success) return refused("bad_arguments", "args", ACT_AFTER_USAGE);
    const record = this.#open.get(parsed.output.call_id);
    if (record === undefined)
      return refused(
        "bad_arguments",
        "act:unknown_call",
        `act.after: this invocation began no act '${parsed.output.call_id.slice(0, 128)}', or it was already ended`,
      );
    this.#open.delete(record.callId);
    record.ok = parsed.output.ok;
    record.result = parsed.output.result;
    const hooks = this.#options.after;
    const verdict = (typeof hooks === "function" ? hooks(record) : hooks?.[record.name]) ?? "proceed";
    if (verdict === "proceed") return json({ withheld: null });
    record.withheldBy = verdict.by ?? HOOKS;
    return json({ withheld: { reason: verdict.withhold, by: record.withheldBy } });
  }
}

function json(value: unknown): CapReply {
  return { ok: true, value: { json: JSON.stringify(value) } };
}
