/**
 * The whole dispatch, as a function you can call with no channel and no socket.
 */
import { ErrorCode } from "../wire/codes.js";
import { isRefusal, type Outcome } from "./content.js";
import { testCtx, type Ctx } from "./ctx.js";
import { BadArguments } from "./decode_args.js";
import { CapError } from "../cap/invocation.js";
import { arrayFind, jsonParse, objectHasOwn } from "../cap/intrinsics.js";
import type { Declared } from "./hook.js";
import { rendered } from "./rendered.js";
import { answerSession, type SessionServed } from "./session.js";
import { answerKind, servesKind, type ServedKinds } from "./kinds.js";
import type { Command, Tool } from "./tool.js";
import { SESSION_KINDS, type SessionKind } from "../wire/session-kinds.js";
import { addedKindOf } from "../wire/kinds.js";

/** What the broker asked: one invocation. `args` is JSON text. */
export interface Asked {
  readonly kind: string;
  readonly name: string;
  readonly args: string;
  readonly strand?: string;
  readonly deadlineMs?: number;
}

/** The reply to one invocation, as it travels in a `result` frame. */
export type Answer =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: { readonly code: string; readonly msg: string } };

/**
 * What an extension serves: tools, hooks, commands, the session-facing kinds
 * (./session.ts), and kinds added beside them (./kinds.ts).
 */
export interface Served extends SessionServed {
  readonly tools?: Readonly<Record<string, Tool>>;
  readonly hooks?: readonly Declared[];
  readonly commands?: Readonly<Record<string, Command>>;
  /** Per added kind, its handlers by name. */
  readonly kinds?: ServedKinds;
}

function fail(code: string, msg: string): Answer {
  return { ok: false, error: { code, msg } };
}

function parseArgs(text: string, what: string): { ok: true; value: unknown } | { ok: false; answer: Answer } {
  try {
    // The captured JSON.parse: an extension's patch of its own cannot change the arguments it is handed.
    return { ok: true, value: jsonParse(text) };
  } catch {
    return { ok: false, answer: fail(ErrorCode.badArguments, `Arguments for ${what} are not JSON`) };
  }
}

function toolValue(result: Outcome): Answer {
  return { ok: true, value: { content: result.content, terminate: result.terminate === "terminate" } };
}

async function runTool(tool: Tool | Command, args: unknown, ctx: Ctx, what: string): Promise<Answer> {
  try {
    const result = await (tool as Tool)(args, ctx);
    if (isRefusal(result)) return fail(ErrorCode.refused, result.refusal);
    return toolValue(result);
  } catch (err) {
    if (err instanceof BadArguments) return fail(ErrorCode.badArguments, `${what}: ${err.message}`);
    // A capability the broker refused, left uncaught: the answer says so, with the rule.
    if (err instanceof CapError)
      return fail(err.code === ErrorCode.denied ? ErrorCode.denied : err.code, `${what}: ${err.message}`);
    throw err;
  }
}

/**
 * A hook's verdict as JSON text, or `crashed` naming the part JSON cannot hold.
 * Top-level fields left `undefined` (`{ block: cond ? "why" : undefined }`)
 * are dropped, as JSON.stringify would; anywhere deeper they are an error,
 * since JSON.stringify would silently turn them into `null` or nothing.
 */
function verdictAnswer(event: string, verdict: unknown): Answer {
  // A hook written in plain JS that returns nothing proceeds, as before.
  if (verdict === undefined || verdict === null) return { ok: true, value: "{}" };
  if (typeof verdict !== "object" || Array.isArray(verdict)) {
    return fail(
      ErrorCode.crashed,
      `hook '${event}' answered ${Array.isArray(verdict) ? "an array" : `a ${typeof verdict}`}, not a verdict object`,
    );
  }
  const proto: unknown = Object.getPrototypeOf(verdict);
  const plain = proto === Object.prototype || proto === null;
  // Only a plain object is stripped: copying a class instance's fields would hide that it is one.
  const stripped = plain
    ? Object.fromEntries(Object.entries(verdict).filter(([, value]) => value !== undefined))
    : verdict;
  if (plain && Object.getOwnPropertySymbols(verdict).length > 0) {
    return fail(ErrorCode.crashed, `hook '${event}' answered a verdict JSON cannot hold: the value has symbol keys`);
  }
  const json = rendered(stripped);
  if (!json.ok) return fail(ErrorCode.crashed, `hook '${event}' answered a verdict JSON cannot hold: ${json.error}`);
  return { ok: true, value: json.json };
}

/** The entry `name` of `table`, its own (never one its prototype lends). */
function own<T>(table: Readonly<Record<string, T>> | undefined, name: string): T | undefined {
  return table !== undefined && objectHasOwn(table, name) ? table[name] : undefined;
}

/** The answer to a name this extension does not serve: the names it does. */
function unknown(noun: "tool" | "command", name: string, served: Record<string, unknown> | undefined): Answer {
  const names = Object.keys(served ?? {}).sort();
  return fail(ErrorCode.unknownTool, `Unknown ${noun} '${name}'; this extension serves [${names.join(", ")}]`);
}

/**
 * Answers one invocation against a table of tools, hooks and commands. A tool
 * that throws anything but {@linkcode BadArguments} throws out of `answer`;
 * the serving loop turns that into a `crashed` answer. An event is answered
 * with the hook's verdict as JSON text; a payload that does not match the
 * event's schema is `bad_arguments` naming the field, a hook that answers
 * `unhandled` is `unhandled`, and a verdict JSON cannot hold is `crashed`
 * naming the part.
 *
 * @example
 * ```ts
 * import { answer, outcome, text } from "@tether/ext";
 * const tools = { echo: (args: unknown) => outcome([text(JSON.stringify(args))]) };
 * const reply = await answer({ tools }, { kind: "tool", name: "echo", args: '{"a":1}' });
 * // reply = { ok: true, value: { content: [{ type: "text", text: '{"a":1}' }], terminate: false } }
 * ```
 */
export async function answer(served: Served, asked: Asked, ctx: Ctx = testCtx()): Promise<Answer> {
  switch (asked.kind) {
    case "tool": {
      const tool = own(served.tools, asked.name);
      if (tool === undefined) return unknown("tool", asked.name, served.tools);
      const args = parseArgs(asked.args, `tool '${asked.name}'`);
      if (!args.ok) return args.answer;
      // `return await`, not `return`: handing a promise to the async function's own
      // promise would call Promise.prototype.then, which the extension may have patched.
      return await runTool(tool, args.value, ctx, `tool '${asked.name}'`);
    }
    case "command": {
      const command = own(served.commands, asked.name);
      if (command === undefined) return unknown("command", asked.name, served.commands);
      return await runTool(command, asked.args, ctx, `command '${asked.name}'`);
    }
    case "event": {
      const row = arrayFind(served.hooks ?? [], (r) => r[0] === asked.name);
      if (row === undefined) return fail(ErrorCode.unhandled, `No hook for '${asked.name}'`);
      const declared = row[0]; // indexed, not destructured: no array iterator on the way
      const hook = row[1];
      if (hook.event !== declared) {
        return fail(
          ErrorCode.mismatchedHook,
          `The manifest declares '${declared}' but the module's hook answers '${hook.event}'`,
        );
      }
      const payload = parseArgs(asked.args, `event '${asked.name}'`);
      if (!payload.ok) return payload.answer;
      try {
        const outcome = await hook.answer(payload.value, ctx);
        if (outcome.unhandled)
          return fail(ErrorCode.unhandled, `The hook for '${asked.name}' does nothing for this event`);
        return verdictAnswer(asked.name, outcome.verdict);
      } catch (err) {
        if (err instanceof BadArguments) return fail(ErrorCode.badArguments, `event '${asked.name}': ${err.message}`);
        throw err;
      }
    }
    default:
      if ((SESSION_KINDS as readonly string[]).includes(asked.kind))
        return await answerSession(served, asked.kind as SessionKind, asked.name, asked.args, ctx);
      {
        // An added kind comes marked (`+greet`, wire/kinds.ts); a test may ask it by its bare name.
        const added = addedKindOf(asked.kind) ?? asked.kind;
        if (servesKind(served.kinds, added)) return await answerKind(served.kinds, added, asked.name, asked.args, ctx);
      }
      return fail(ErrorCode.badKind, `This extension does not serve kind '${asked.kind}'`);
  }
}
