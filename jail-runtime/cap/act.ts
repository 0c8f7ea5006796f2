/**
 * Reported acts: an extension tells the session's hooks about an act of its
 * own (sending mail, charging a card, editing a file it manages) before it
 * runs it, and what came of it after, as the broker does for tool calls. Two
 * capability calls under the invocation's token: `act.before` (the session's
 * `tool_call` hooks may block the act or rewrite its arguments) and
 * `act.after` (its `tool_result` hooks are told the output, and may withhold
 * it). `ctx.act` and `ctx.actBefore` are these functions
 * (jail-runtime/wire/act-args.ts has the wire's shapes; docs/hooks.md, "Reported acts").
 */
import { CapError, callCap } from "./invocation.js";
import { SafeError, SafeString, jsonParse, stringSlice } from "./intrinsics.js";

/**
 * A hook blocked a reported act (`phase` "before": it did not run), or
 * withheld its output (`phase` "after": it ran, and you may not use what it
 * gave). A {@linkcode CapError} with code `denied`: left uncaught in a tool,
 * it becomes the tool's answer with the hook's reason, so the model reads why.
 *
 * @example
 * ```ts
 * import { ActBlocked } from "@tether/cap";
 * import { outcome, refuse, text, type Tool } from "@tether/ext";
 * export const send: Tool = async (args, ctx) => {
 *   try {
 *     await ctx.act("mail.submit", args, () => "queued");
 *     return outcome([text("sent")]);
 *   } catch (err) {
 *     if (err instanceof ActBlocked) return refuse(`Not sent: ${err.reason} (${err.by} said so)`);
 *     throw err;
 *   }
 * };
 * ```
 */
export class ActBlocked extends CapError {
  constructor(
    /** The act's name, as reported. */
    readonly act: string,
    /** `before`: the act did not run; `after`: it ran and its output was withheld. */
    readonly phase: "before" | "after",
    /** The hook's reason. */
    readonly reason: string,
    /** The extension whose hook said so. */
    readonly by: string,
  ) {
    super(
      "denied",
      phase === "before"
        ? `Blocked by '${by}': ${reason}`
        : `The output of act '${act}' was withheld by '${by}': ${reason}`,
    );
  }
}

/** A begun act: the arguments to run it with, and how to tell the hooks how it ended (once). */
export interface ActHandle {
  /** The act's name. */
  readonly name: string;
  /** The broker's id for it: the hooks' `call_id`. */
  readonly callId: string;
  /** The arguments to run it with: yours, or a hook's rewrite (checked against the act's `parameters`). */
  readonly arguments: unknown;
  /** The extension whose hook rewrote the arguments, or null. */
  readonly rewrittenBy: string | null;
  /** Tells the hooks the act's output; resolves to it, or rejects with {@linkcode ActBlocked} if withheld. */
  after<T>(output: T): Promise<T>;
  /** Tells the hooks the act failed with `error`; rejects with {@linkcode ActBlocked} if a hook withheld it. */
  failed(error: unknown): Promise<void>;
}

interface Stopped {
  readonly reason: string;
  readonly by: string;
}

function replyJson(answer: unknown): Record<string, unknown> {
  const json = (answer as { json?: unknown } | null)?.json;
  const parsed: unknown = typeof json === "string" ? jsonParse(json) : null;
  if (typeof parsed !== "object" || parsed === null)
    throw new CapError("crashed", "act: the broker's answer is malformed");
  return parsed as Record<string, unknown>;
}

function stopped(value: unknown): Stopped | null {
  if (typeof value !== "object" || value === null) return null;
  const { reason, by } = value as { reason?: unknown; by?: unknown };
  return { reason: SafeString(reason ?? ""), by: SafeString(by ?? "") };
}

/** An error as the hooks are told it: its name and message, never its stack. */
function described(error: unknown): { name: string; message: string } {
  if (error instanceof SafeError) return { name: error.name, message: stringSlice(error.message, 0, 4096) };
  return { name: "Error", message: stringSlice(SafeString(error), 0, 4096) };
}

/**
 * Reports the act `name` with `args` to the session's hooks before you run it:
 * resolves to a handle with the arguments to run it with, or rejects with
 * {@linkcode ActBlocked} when a hook blocked it (do not run it). Then call
 * `handle.after(output)` or `handle.failed(error)`. The act must be declared
 * in the manifest (`[[act]] name = "…"`), else a `CapError` (`denied`).
 *
 * @example
 * ```ts
 * import { actBefore } from "@tether/cap";
 * const handle = await actBefore("payment.charge", { cents: 1200 });
 * const receipt = await handle.after({ receipt: "r-1", charged: handle.arguments });
 * ```
 */
export async function actBefore(name: string, args: unknown): Promise<ActHandle> {
  const reply = replyJson(await callCap("act.before", { name: SafeString(name), arguments: args ?? null }));
  const callId = SafeString(reply["call_id"] ?? "");
  const blocked = stopped(reply["blocked"]);
  if (blocked !== null) throw new ActBlocked(name, "before", blocked.reason, blocked.by);
  let ended = false;
  const end = async (ok: boolean, result: unknown): Promise<Stopped | null> => {
    if (ended) throw new SafeError(`act '${name}' (${callId}) was already ended`);
    ended = true;
    // A call that fails (a result past its bound, the invocation over) rejects: the output is not handed back.
    return stopped(replyJson(await callCap("act.after", { call_id: callId, ok, result }))["withheld"]);
  };
  const rewrittenBy = reply["rewritten_by"];
  return {
    name,
    callId,
    arguments: reply["arguments"],
    rewrittenBy: typeof rewrittenBy === "string" ? rewrittenBy : null,
    async after<T>(output: T): Promise<T> {
      const withheld = await end(true, output === undefined ? null : output);
      if (withheld !== null) throw new ActBlocked(name, "after", withheld.reason, withheld.by);
      return output;
    },
    async failed(error: unknown): Promise<void> {
      const withheld = await end(false, described(error));
      if (withheld !== null) throw new ActBlocked(name, "after", withheld.reason, withheld.by);
    },
  };
}

/**
 * Reports the act `name` with `args`, runs `run` with the arguments the hooks
 * left (yours, or a rewrite), and tells the hooks its output (or its error,
 * which is then thrown again). Rejects with {@linkcode ActBlocked} when a hook
 * blocked the act (`run` never ran) or withheld its output.
 *
 * @example
 * ```ts
 * import { act } from "@tether/cap";
 * const sent = await act("mail.submit", { to: "ada@example.com" }, (args) => ({ queued: args }));
 * ```
 */
export async function act<T>(name: string, args: unknown, run: (args: unknown) => T | Promise<T>): Promise<T> {
  const handle = await actBefore(name, args);
  let output: T;
  try {
    output = await run(handle.arguments);
  } catch (err) {
    await handle.failed(err);
    throw err;
  }
  return handle.after(output);
}
