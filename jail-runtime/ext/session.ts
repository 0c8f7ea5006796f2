/**
 * The session-facing contributions an extension's module may export beside
 * `tools`, `hooks` and `commands`, and how each is answered:
 *
 * - `contexts`: named context loaders — text for the model's context, loaded
 *   when a session activates the extension (`[[context]]` rows);
 * - `managed`: `prepare` (this session's instructions, context, warnings,
 *   which declared tools and commands are on, whether it observes) and
 *   `close` (let go of what `prepare` made) — the `[managed]` table;
 * - `observe`: told the session's events in batches, answering nothing (`[observe]`);
 * - `routes`: named handlers the harness calls with a request string (`[[route]]`);
 * - `compactions`: named strategies that summarise a conversation and say
 *   which messages they folded (`[[compaction]]`);
 * - `providers`: model providers answering completions (`[[provider]]`,
 *   ./provider.ts), asked in the broker's daemon scope;
 * - `init`: the initializer (`[init]`, ./init.ts), run once per approved
 *   version in the daemon scope.
 *
 * Payloads and answers are the schemas in jail-runtime/wire/session-kinds.ts.
 */
import * as v from "valibot";
import { ErrorCode } from "../wire/codes.js";
import { describeIssues } from "../wire/frames.js";
import {
  SessionAnswers,
  SessionPayloads,
  type SessionKind,
  type SessionPayload,
  type SessionReply,
} from "../wire/session-kinds.js";
import { jsonParse, objectHasOwn } from "../cap/intrinsics.js";
import type { Ctx } from "./ctx.js";
import { BadArguments } from "./decode_args.js";
import { CapError } from "../cap/invocation.js";
import { rendered } from "./rendered.js";
import { ProviderError, type Provider } from "./provider.js";
import type { Service } from "./service.js";
import type { Init } from "./init.js";
import type { SearchProvider } from "./search.js";

type Returns<T> = T | Promise<T>;

/** A context loader: the session it loads for in, text for the model out. */
export type ContextLoader = (session: SessionPayload<"context">, ctx: Ctx) => Returns<string>;
/** A host route: the harness's request string (and the session) in, the response string out. */
export type Route = (request: string, session: SessionPayload<"route">, ctx: Ctx) => Returns<string>;
/** A compaction strategy: the conversation in; the summary and the folds it made out. */
export type Strategy = (input: SessionPayload<"compact">, ctx: Ctx) => Returns<SessionReply<"compact">>;
/** An observer: a batch of the session's events, in order; nothing to answer. */
export type Observer = (batch: SessionPayload<"observe">, ctx: Ctx) => Returns<void>;

/** `[managed]`: prepared once per session at activation; closed when the session lets it go. */
export interface Managed {
  readonly prepare: (session: SessionPayload<"prepare">, ctx: Ctx) => Returns<SessionReply<"prepare">>;
  readonly close?: (closing: SessionPayload<"close">, ctx: Ctx) => Returns<void>;
}

/** What a module serves of these kinds. */
export interface SessionServed {
  readonly contexts?: Readonly<Record<string, ContextLoader>>;
  readonly routes?: Readonly<Record<string, Route>>;
  readonly compactions?: Readonly<Record<string, Strategy>>;
  readonly managed?: Managed;
  readonly observe?: Observer;
  readonly providers?: Readonly<Record<string, Provider>>;
  /** HTTP services (`[[service]]`, ./service.ts), asked in the daemon scope. */
  readonly services?: Readonly<Record<string, Service>>;
  /** The initializer (`[init]`, ./init.ts), run once per approved version. */
  readonly init?: Init;
  /** Search providers (`[[search]]`, ./search.ts), asked in the sessions it is active in. */
  readonly search?: Readonly<Record<string, SearchProvider>>;
}

type Answer =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly error: { readonly code: string; readonly msg: string } };

const fail = (code: string, msg: string): Answer => ({ ok: false, error: { code, msg } });

function own<T>(table: Readonly<Record<string, T>> | undefined, name: string): T | undefined {
  return table !== undefined && objectHasOwn(table, name) ? table[name] : undefined;
}

/** The names this module serves of each kind, and which session handlers it has: what its `hello` says. */
export function sessionNames(served: SessionServed): {
  contexts: string[];
  routes: string[];
  compactions: string[];
  providers: string[];
  services: string[];
  searches: string[];
  handles: Array<"prepare" | "close" | "observe" | "init">;
} {
  const handles: Array<"prepare" | "close" | "observe" | "init"> = [];
  if (typeof served.managed?.prepare === "function") handles.push("prepare");
  if (typeof served.managed?.close === "function") handles.push("close");
  if (typeof served.observe === "function") handles.push("observe");
  if (typeof served.init === "function") handles.push("init");
  return {
    contexts: Object.keys(served.contexts ?? {}),
    routes: Object.keys(served.routes ?? {}),
    compactions: Object.keys(served.compactions ?? {}),
    providers: Object.keys(served.providers ?? {}),
    services: Object.keys(served.services ?? {}),
    searches: Object.keys(served.search ?? {}),
    handles,
  };
}

/** Runs the function for `kind`, checking its payload first and its answer after; throws what the function throws. */
async function run(
  kind: SessionKind,
  name: string,
  served: SessionServed,
  payload: unknown,
  ctx: Ctx,
): Promise<Answer> {
  const what =
    kind === "prepare" || kind === "close" || kind === "observe" || kind === "init" ? kind : `${kind} '${name}'`;
  const checked = v.safeParse(SessionPayloads[kind], payload);
  if (!checked.success) return fail(ErrorCode.badArguments, `${what}: ${describeIssues(checked.issues)}`);
  const input = checked.output as never;
  let reply: unknown;
  switch (kind) {
    case "context": {
      const loader = own(served.contexts, name);
      if (loader === undefined)
        return fail(
          ErrorCode.unknownTool,
          `No context loader '${name}'; this extension serves [${Object.keys(served.contexts ?? {})
            .sort()
            .join(", ")}]`,
        );
      reply = { text: await loader(input, ctx) };
      break;
    }
    case "route": {
      const route = own(served.routes, name);
      if (route === undefined)
        return fail(
          ErrorCode.unknownTool,
          `No route '${name}'; this extension serves [${Object.keys(served.routes ?? {})
            .sort()
            .join(", ")}]`,
        );
      reply = { response: await route((input as SessionPayload<"route">).request, input, ctx) };
      break;
    }
    case "compact": {
      const strategy = own(served.compactions, name);
      if (strategy === undefined)
        return fail(
          ErrorCode.unknownTool,
          `No compaction strategy '${name}'; this extension serves [${Object.keys(served.compactions ?? {})
            .sort()
            .join(", ")}]`,
        );
      reply = await strategy(input, ctx);
      break;
    }
    case "complete": {
      const provider = own(served.providers, name);
      if (provider === undefined)
        return fail(
          ErrorCode.unknownTool,
          `No provider '${name}'; this extension serves [${Object.keys(served.providers ?? {})
            .sort()
            .join(", ")}]`,
        );
      reply = await provider(input, ctx);
      break;
    }
    case "service": {
      const service = own(served.services, name);
      if (service === undefined)
        return fail(
          ErrorCode.unknownTool,
          `No service '${name}'; this extension serves [${Object.keys(served.services ?? {})
            .sort()
            .join(", ")}]`,
        );
      reply = await service(input, ctx);
      break;
    }
    case "search": {
      const provider = own(served.search, name);
      if (provider === undefined)
        return fail(
          ErrorCode.unknownTool,
          `No search provider '${name}'; this extension serves [${Object.keys(served.search ?? {})
            .sort()
            .join(", ")}]`,
        );
      const asked = input as SessionPayload<"search">;
      const options = { ...asked.options, session_id: asked.session_id, provider: asked.provider };
      reply = { results: await provider(asked.query, options, ctx) };
      break;
    }
    case "prepare":
      if (served.managed === undefined)
        return fail(ErrorCode.unhandled, "This extension exports no `managed` to prepare a session with");
      reply = (await served.managed.prepare(input, ctx)) ?? {};
      break;
    case "close":
      await served.managed?.close?.(input, ctx);
      reply = {};
      break;
    case "init":
      if (served.init === undefined) return fail(ErrorCode.unhandled, "This extension exports no `init`");
      reply = (await served.init(input, ctx)) ?? {};
      break;
    case "observe":
      if (served.observe === undefined) return fail(ErrorCode.unhandled, "This extension exports no `observe`");
      await served.observe(input, ctx);
      reply = {};
      break;
  }
  const answer = v.safeParse(SessionAnswers[kind], reply);
  if (!answer.success)
    return fail(ErrorCode.crashed, `${what} answered what it may not: ${describeIssues(answer.issues)}`);
  const json = rendered(answer.output);
  if (!json.ok) return fail(ErrorCode.crashed, `${what} answered what JSON cannot hold: ${json.error}`);
  return { ok: true, value: json.json };
}

/** Answers one invocation of a session-facing kind: its answer as JSON text, or a failure naming what to fix. */
export async function answerSession(
  served: SessionServed,
  kind: SessionKind,
  name: string,
  args: string,
  ctx: Ctx,
): Promise<Answer> {
  let payload: unknown;
  try {
    payload = jsonParse(args);
  } catch {
    return fail(ErrorCode.badArguments, `The payload for ${kind} '${name}' is not JSON`);
  }
  try {
    return await run(kind, name, served, payload, ctx);
  } catch (err) {
    const what = name === "" ? kind : `${kind} '${name}'`;
    if (err instanceof BadArguments) return fail(ErrorCode.badArguments, `${what}: ${err.message}`);
    // A capability the broker refused, left uncaught: the answer says so, with the rule (as for a tool).
    if (err instanceof CapError) return fail(err.code, `${what}: ${err.message}`);
    // A provider's API failed: the message says how, with no stack.
    if (err instanceof ProviderError) return fail(ErrorCode.refused, `${what}: ${err.message}`);
    throw err;
  }
}
