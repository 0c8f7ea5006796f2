/**
 * The port between the `search.query` capability (broker/caps/search.ts) and
 * the session that answers it (broker/sessions/search-call.ts): the
 * capabilities cannot import the sessions, so a session puts its search on its
 * scope and the capability environment finds it by the invocation's session id.
 */
import type { WaitChain } from "./waits.js";
import type { SearchOptions, SearchQueryReply } from "../../jail-runtime/wire/search-kinds.js";

/** One search an extension asks from inside one of its invocations. */
export interface SearchAsk {
  readonly sessionId: string;
  /** The extension asking: its own providers are not asked (its satellite is busy with this call). */
  readonly extension: string;
  readonly query: string;
  readonly options: SearchOptions;
  /** Aborts when the asking invocation ends. */
  readonly signal: AbortSignal;
  /** The satellites waiting on the search, the asker's last: their providers are not asked. */
  readonly chain: WaitChain;
}

/** A session's search as the capability asks it: never rejects for a provider's fault (each is a note). */
export type SessionSearch = (ask: SearchAsk) => Promise<SearchQueryReply>;

/** Where the capability environment finds the session's search; null: no session holds that scope. */
export type SearchPort = (sessionId: string) => SessionSearch | null;
