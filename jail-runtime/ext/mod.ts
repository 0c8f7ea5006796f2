/**
 * The author SDK: the vocabulary an extension's tools and hooks are written in.
 *
 * @example
 * ```ts
 * import { decodeArgs, outcome, text, v, type Tool } from "@tether/ext";
 * export const tools: Record<string, Tool> = {
 *   greet: (args, ctx) => {
 *     const { name } = decodeArgs(v.object({ name: v.string() }), args);
 *     ctx.report(`greeting ${name}`);
 *     return outcome([text(`Hello, ${name}`)]);
 *   },
 * };
 * ```
 */
export {
  text,
  json,
  image,
  audio,
  resource,
  outcome,
  refuse,
  isRefusal,
  type Content,
  type EmbeddedResource,
  type Outcome,
  type Refusal,
  type Terminate,
} from "./content.js";
export { testCtx, type Ctx } from "./ctx.js";
export { ActBlocked, type ActHandle } from "../cap/act.js";
export { decodeArgs, describeArgIssues, BadArguments } from "./decode_args.js";
export {
  hook,
  proceed,
  unhandled,
  HOOK_EVENTS,
  type Hook,
  type AnyHook,
  type HookEvent,
  type HookReply,
  type HookOutcome,
  type Verdict,
  type Declared,
  type EventPayload,
  type EventVerdict,
} from "./hook.js";
export { answer, type Answer, type Asked, type Served } from "./answer.js";
export type { ContextLoader, Managed, Observer, Route, Strategy, SessionServed } from "./session.js";
export {
  deltaPartials,
  excerpt,
  MAX_PARTIALS,
  PARTIAL_CHARS,
  ProviderError,
  reportDeltas,
  sseEvents,
  type Provider,
  type SseEvent,
} from "./provider.js";
export type { ChatMessage, Usage } from "../wire/provider-kinds.js";
export type { Service, ServiceRequest, ServiceResponse } from "./service.js";
export type { Init, InitPayload, InitReply } from "./init.js";
export type { SearchProvider, SearchProviderOptions } from "./search.js";
export type { SearchOptions, SearchResult } from "../wire/search-kinds.js";
export type { KindHandler, KindHandlers, ServedKinds } from "./kinds.js";
export type { SessionPayload, SessionReply, ObservedEvent, ObservedKind, Fold } from "../wire/session-kinds.js";
export { rendered, type Rendered } from "./rendered.js";
export { serve, serving } from "./runtime.js";
export type { Tool, Command } from "./tool.js";
export { ErrorCode } from "../wire/codes.js";
export * as v from "./v.js";
