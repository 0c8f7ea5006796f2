/**
 * Model providers (`[[provider]]`): what a module exports as `providers`, and
 * the helpers a provider is written with — reading a server-sent-events body,
 * turning deltas into partials the broker will pass on, and failing with a
 * message the harness can act on.
 *
 * A provider is handed the completion (payload `complete`,
 * jail-runtime/wire/provider-kinds.ts), calls its API through `net.fetch`
 * (passing `{ secret: request.secret }` when the manifest names one), reports
 * each delta with `ctx.report`, and answers the whole text with its usage.
 */
import type { Ctx } from "./ctx.js";
import type { SessionPayload, SessionReply } from "../wire/session-kinds.js";

type Returns<T> = T | Promise<T>;

/** A provider: the completion request in; the whole text and its usage out (deltas go out as `ctx.report`). */
export type Provider = (request: SessionPayload<"complete">, ctx: Ctx) => Returns<SessionReply<"complete">>;

/**
 * What a provider throws when its API failed (an error status, a malformed
 * stream): the harness is answered `refused` with this message, never a stack.
 */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
}

/** One server-sent event: its `event:` name (null when none) and its `data:` lines joined by "\n". */
export interface SseEvent {
  readonly event: string | null;
  readonly data: string;
}

/**
 * Parses a `text/event-stream` body (the whole of it) into its events, as the
 * EventSource standard reads them: `field: value` lines, an event ending at a
 * blank line, `:` comments skipped. An unfinished last event is kept.
 */
export function sseEvents(body: string): SseEvent[] {
  const events: SseEvent[] = [];
  let event: string | null = null;
  let data: string[] = [];
  const flush = () => {
    if (data.length > 0 || event !== null) events.push({ event, data: data.join("\n") });
    event = null;
    data = [];
  };
  for (const line of body.split(/\r\n|\r|\n/)) {
    if (line === "") {
      flush();
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  flush();
  return events;
}

/** Partials one completion sends at most (the broker passes on 50 a second, 4096 characters each). */
export const MAX_PARTIALS = 40;
/** Characters one partial carries at most. */
export const PARTIAL_CHARS = 4000;

/**
 * Deltas as the partials to report: one per delta while they are few; past
 * `MAX_PARTIALS`, neighbours are merged so there are at most that many, none
 * over `PARTIAL_CHARS` (what would not fit is left out: the answer's text is
 * whole, the partials are a preview).
 */
export function deltaPartials(deltas: readonly string[], max = MAX_PARTIALS, width = PARTIAL_CHARS): string[] {
  const nonEmpty = deltas.filter((d) => d.length > 0);
  const per = Math.max(1, Math.ceil(nonEmpty.length / max));
  const out: string[] = [];
  for (let i = 0; i < nonEmpty.length && out.length < max; i += per)
    out.push(
      nonEmpty
        .slice(i, i + per)
        .join("")
        .slice(0, width),
    );
  return out;
}

/** Reports each partial of `deltas` (see `deltaPartials`) through `ctx.report`, in order. */
export function reportDeltas(ctx: Ctx, deltas: readonly string[]): void {
  for (const partial of deltaPartials(deltas)) ctx.report(partial);
}

/** A short excerpt of an API's error body for a message: one line, at most 300 characters. */
export function excerpt(body: string): string {
  const line = body.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
