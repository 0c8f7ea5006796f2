/**
 * Sends one judged hop with undici: connected to the judged address (the
 * pinned agent never looks the name up again), the body bounded while it is
 * read, everything cut off when `signal` aborts (the deadline, the invocation
 * ending, a policy withdrawn mid-flight, the broker destroyed). A redirect's
 * body is never read: its connection is closed. The request's Accept-Encoding
 * is the broker's, and the body comes back decoded (content-coding.ts).
 */
import type { EgressAgents } from "./agents.js";
import { decodeContent, withBrokerEncoding } from "./content-coding.js";
import { undici } from "./undici.js";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";

/** What one hop sends: the exchange as it stands, with whatever the broker adds at send time (a secret). */
export interface HopRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array | null;
}

export interface FetchResponse {
  readonly status: number;
  readonly headers: Array<[string, string]>;
  readonly body: Uint8Array;
}

export type HopResult =
  | { readonly kind: "response"; readonly response: FetchResponse }
  | { readonly kind: "redirect"; readonly status: number; readonly location: string }
  | { readonly kind: "failed"; readonly failure: string; readonly limit?: "body" };

/** The body, at most `max` bytes (null: it was longer), held as it comes in one buffer (`HeldBytes`). */
async function readBounded(body: AsyncIterable<Uint8Array>, max: number): Promise<Uint8Array | null> {
  const held = new HeldBytes(max);
  for await (const chunk of body) if (!held.append(chunk)) return null;
  return held.view();
}

/**
 * Closes a body without reading it (the connection goes with
 * it); its abort error is expected, not an event to crash on.
 */
function discard(body: { on(event: "error", listener: () => void): unknown; destroy(): unknown }): void {
  body.on("error", () => {});
  body.destroy();
}

/** Why `signal` aborted, as a sentence (its reason when it is one). */
function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === "TimeoutError") return "the invocation's deadline passed";
  if (reason instanceof Error) return reason.message;
  return typeof reason === "string" ? reason : "aborted";
}

/**
 * Sends `hop` (its URL may hold a secret: nothing here echoes
 * it but undici's own errors, which the caller redacts).
 */
export async function sendHop(
  extension: string,
  hop: HopRequest,
  pinned: { address: string; family: 4 | 6 },
  agents: EgressAgents,
  maxBodyBytes: number,
  signal: AbortSignal,
): Promise<HopResult> {
  const url = hop.url;
  let res;
  try {
    const { request } = await undici();
    res = await request(url, {
      method: hop.method as "GET",
      // The broker's Accept-Encoding, never the extension's: it decodes what comes back before anyone reads it.
      headers: Object.fromEntries(withBrokerEncoding(hop.headers)),
      body: hop.body ?? null,
      dispatcher: await agents.pinned(extension, url.origin, pinned.address, pinned.family),
      // undici's own timers are coarse (they can fire ~0.5 s early): the signal is exact.
      headersTimeout: 0,
      bodyTimeout: 0,
      signal,
    });
  } catch (err) {
    if (signal.aborted) return { kind: "failed", failure: `request to ${url.origin} stopped: ${abortReason(signal)}` };
    return { kind: "failed", failure: `request to ${url.origin} failed: ${(err as Error).message}` };
  }
  const location = res.headers.location;
  if (res.statusCode >= 300 && res.statusCode < 400 && location !== undefined) {
    // Closing costs one connection; draining would let a server stream without bound.
    discard(res.body);
    return { kind: "redirect", status: res.statusCode, location: Array.isArray(location) ? location[0]! : location };
  }
  let bytes: Uint8Array | null;
  try {
    bytes = await readBounded(res.body, maxBodyBytes);
  } catch (err) {
    if (signal.aborted)
      return { kind: "failed", failure: `reading the body from ${url.origin} stopped: ${abortReason(signal)}` };
    return { kind: "failed", failure: `reading the body from ${url.origin} failed: ${(err as Error).message}` };
  }
  if (bytes === null) {
    discard(res.body);
    return { kind: "failed", failure: `the response body exceeds ${maxBodyBytes} bytes`, limit: "body" };
  }
  const headers: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.push([name, v]);
  }
  const decoded = decodeContent(bytes, headers, maxBodyBytes);
  if ("error" in decoded)
    return { kind: "failed", failure: decoded.error, ...(decoded.limit !== undefined ? { limit: decoded.limit } : {}) };
  return { kind: "response", response: { status: res.statusCode, headers: decoded.headers, body: decoded.body } };
}
