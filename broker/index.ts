/**
 * Tether as a library: the one import a Node harness needs.
 *
 * @example
 * ```ts
 * import { Broker, Session } from "tether";
 * const broker = Broker.open({ home: "/tmp/tether-home" });
 * const session = await Session.open(broker, { id: "s1", workspace: process.cwd() });
 * const report = await session.callTool("echo", '{"text":"hi"}');
 * await session.close();
 * await broker.close();
 * ```
 *
 * See docs/harness.md.
 */
export { Broker, type BrokerOptions, type CallOptions, type HookOutcome } from "./broker.js";
export {
  Session,
  MAX_HELD,
  type SessionOptions,
  type ExtensionStatus,
  type ExtensionState,
  type ReloadReport,
  type ToolCallReport,
  type HarnessEvent,
  type HarnessPayload,
  type RouteReport,
  type CompactInput,
  type CompactReport,
  type Compacted,
  type NamedRow,
  type FoldRow,
} from "./sessions/session.js";
export type { Step } from "./sessions/stream.js";
export type { SearchReport, ProviderOutcome as SearchProviderOutcome } from "./sessions/search-call.js";
export type { SearchProviderEntry, SessionSearchProviders } from "./sessions/search-providers.js";
export type { MergedResult, SearchOptionsInput, SearchResult } from "../jail-runtime/wire/search-kinds.js";
export type { CompletionOptions, CompletionOutcome, CompletionReport } from "./providers/completion.js";
export type { ProvidersView } from "./providers/view.js";
export type { ProviderEntry, ProviderModel, UnavailableProvider } from "./providers/catalog.js";
export type { DaemonStatus } from "./providers/daemon.js";
export { DAEMON_SCOPE } from "./providers/daemon.js";
export type { Composed, TraceRow } from "./hooks/compose.js";
export type { InvocationOutcome, ToolContent, ToolReply } from "./base/outcome.js";
export { replyOf, textOf } from "./base/outcome.js";
export type { SessionPolicy } from "./caps/policy.js";
export { TetherError, BrokerCode, WireCode } from "./base/errors.js";
export type { EventName, EventPayload, EventVerdict } from "../jail-runtime/wire/events.js";
