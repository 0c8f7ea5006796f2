/**
 * `search.query`: an extension asks the session's search providers, in the
 * session's preference order, and gets their merged results (the session's
 * search, broker/sessions/search-call.ts, reached through the port in
 * broker/base/search-port.ts). Judged per call — the approval must grant
 * `[capabilities] search`, a session must hold the invocation's scope, and a
 * search provider's own search may not search again — then hooked (`cap_call`
 * sees the query's head) and audited, one row per call.
 */
import { SearchQueryArgs } from "../../jail-runtime/wire/search-kinds.js";
import type * as v from "valibot";
import { WireCode } from "../base/errors.js";
import type { SessionSearch } from "../base/search-port.js";
import type { CallScope } from "./context.js";
import { refusal, type Act } from "./pipeline.js";
import type { Rate } from "./rate.js";

export { SearchQueryArgs };
export const SEARCHES_PER_SECOND = 10;
/** How much of the query an audit row and a `cap_call` hook are shown. */
const SHOWN_QUERY = 256;

export function searchAct(
  scope: CallScope,
  args: v.InferOutput<typeof SearchQueryArgs>,
  rate: Rate,
): Act<SessionSearch> {
  const { info, ctx, env } = scope;
  return {
    judge: () => {
      if (!(ctx.grants().capabilities ?? []).includes("search"))
        return refusal(
          WireCode.denied,
          "capabilities.search",
          `search.query: '${info.extension}' does not ask for search; add [capabilities] search = true to its ` +
            `manifest, install it again and have the operator approve it`,
        );
      if (info.kind === "search")
        return refusal(
          WireCode.denied,
          "search:nested",
          "search.query: a search provider may not search from inside a search (it would ask the providers " +
            "that are waiting on it); answer from what it has",
        );
      const search = env.search?.(ctx.sessionId) ?? null;
      if (search === null)
        return refusal(
          WireCode.denied,
          "search:no_session",
          `search.query: no session holds '${ctx.sessionId}' here, so there are no search providers to ask ` +
            `(a call outside a session, or from the daemon scope, cannot search)`,
        );
      if (!rate.take())
        return refusal(WireCode.denied, "rate:search", `search.query: more than ${SEARCHES_PER_SECOND} a second`);
      return search;
    },
    shown: () => ({ target: args.query.slice(0, SHOWN_QUERY) }),
    perform: async (search) => {
      const reply = await search({
        sessionId: ctx.sessionId,
        extension: info.extension,
        query: args.query,
        options: args.options,
        signal: ctx.signal,
        chain: ctx.chain,
      });
      const json = JSON.stringify(reply);
      return {
        reply: { ok: true, value: { json } },
        decision: "allowed",
        rule: "capabilities.search",
        target: args.query.slice(0, SHOWN_QUERY),
        bytes: json.length,
      };
    },
  };
}
