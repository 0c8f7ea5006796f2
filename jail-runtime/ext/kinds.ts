/**
 * Kinds added beside the built-ins (jail-runtime/wire/kinds.ts): what a
 * module exports as `kinds` — per kind, its handlers by name — and how one
 * invocation of such a kind is answered. The dispatch is generic: the payload
 * (JSON text the broker already checked against the kind's payload schema) is
 * handed to the handler of that name, and what it returns goes back as JSON
 * text, which the broker checks against the kind's answer schema (`crashed`
 * when it does not fit). A kind's own SDK half (in its folder) types the
 * handlers from its definition: `KindHandlers<typeof Greet>`.
 *
 * @example
 * ```ts
 * // manifest.toml: [[greet]] name = "hello"
 * export const kinds = { greet: { hello: (payload: { who: string }) => ({ text: `Hello, ${payload.who}` }) } };
 * ```
 */
import { ErrorCode } from "../wire/codes.js";
import type { KindAnswer, KindDefinition, KindPayload } from "../wire/kinds.js";
import { arraySort, jsonParse, objectHasOwn, objectKeys } from "../cap/intrinsics.js";
import { CapError } from "../cap/invocation.js";
import type { Ctx } from "./ctx.js";
import { BadArguments } from "./decode_args.js";
import { rendered } from "./rendered.js";

type Returns<T> = T | Promise<T>;

/** One handler of an added kind: its payload in, its answer out. */
export type KindHandler<P = any, A = unknown> = (payload: P, ctx: Ctx) => Returns<A>;

/** The handlers of one added kind, by name (the names of its `[[<kind>]]` rows); typed by its definition when given. */
export type KindHandlers<D extends KindDefinition | undefined = undefined> = Readonly<
  Record<string, D extends KindDefinition ? KindHandler<KindPayload<D>, KindAnswer<D>> : KindHandler>
>;

/** What a module serves of the added kinds, by kind. */
export type ServedKinds = Readonly<Record<string, KindHandlers>>;

type Answer =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly error: { readonly code: string; readonly msg: string } };

const fail = (code: string, msg: string): Answer => ({ ok: false, error: { code, msg } });

/** Whether the module serves added kind `kind` at all. */
export function servesKind(served: ServedKinds | undefined, kind: string): served is ServedKinds {
  return served !== undefined && objectHasOwn(served, kind);
}

/** The names it serves of each added kind: what its `hello` says under `kinds`. */
export function kindNames(served: ServedKinds | undefined): Record<string, string[]> {
  const names: Record<string, string[]> = {};
  for (const kind of objectKeys(served ?? {})) names[kind] = arraySort(objectKeys(served?.[kind] ?? {}));
  return names;
}

/** Answers one invocation of added kind `kind`: the handler's answer as JSON text, or a failure naming what to fix. */
export async function answerKind(
  served: ServedKinds,
  kind: string,
  name: string,
  args: string,
  ctx: Ctx,
): Promise<Answer> {
  const handlers = served[kind] ?? {};
  const what = `${kind} '${name}'`;
  if (!objectHasOwn(handlers, name))
    return fail(
      ErrorCode.unknownTool,
      `No ${what}; this extension serves [${arraySort(objectKeys(handlers)).join(", ")}]`,
    );
  const handler = handlers[name] as KindHandler;
  let payload: unknown;
  try {
    payload = jsonParse(args);
  } catch {
    return fail(ErrorCode.badArguments, `The payload for ${what} is not JSON`);
  }
  let reply: unknown;
  try {
    // `await`, not a bare return: see answer.ts (an extension may have patched Promise.prototype.then).
    reply = await handler(payload, ctx);
  } catch (err) {
    if (err instanceof BadArguments) return fail(ErrorCode.badArguments, `${what}: ${err.message}`);
    if (err instanceof CapError) return fail(err.code, `${what}: ${err.message}`);
    throw err;
  }
  const json = rendered(reply);
  if (!json.ok) return fail(ErrorCode.crashed, `${what} answered what JSON cannot hold: ${json.error}`);
  return { ok: true, value: json.json };
}
