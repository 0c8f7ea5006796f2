/**
 * HTTP services (`[[service]]`): one HTTP request to `/ext/<extension>/…` as
 * the extension's daemon satellite is handed it (kind `service`) and the
 * response it answers, defined once as valibot schemas for the SDK and the
 * broker. Bodies travel as text or base64, bounded (docs/services.md).
 */
import * as v from "valibot";

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const Name = v.pipe(v.string(), v.maxLength(256));

/** The ceiling of a route's `max_body_bytes`, and of any response body: 1 MiB. */
export const MAX_SERVICE_BODY_BYTES = 1024 * 1024;
/** A route's request body bound when its row names none: 16 KiB. */
export const DEFAULT_SERVICE_BODY_BYTES = 16 * 1024;
/** The most headers a request or response carries across. */
export const MAX_SERVICE_HEADERS = 64;
/** The most one header value holds. */
export const MAX_HEADER_CHARS = 8192;
/** The most a path or query holds. */
export const MAX_SERVICE_PATH_CHARS = 8192;

const Headers = v.pipe(
  v.record(
    v.pipe(v.string(), v.maxLength(256), v.regex(/^[!#$%&'*+.^_`|~0-9a-z-]+$/, "expected a lowercase header name")),
    Text(MAX_HEADER_CHARS),
  ),
  v.check((h) => Object.keys(h).length <= MAX_SERVICE_HEADERS, `expected at most ${MAX_SERVICE_HEADERS} headers`),
);
/** base64 of up to MAX_SERVICE_BODY_BYTES, or that much text. */
const Body = Text(Math.ceil(MAX_SERVICE_BODY_BYTES / 3) * 4);

export const ServicePayload = v.object({
  /** The `[[service]]` row's name. */
  route: Name,
  method: Name,
  /** The path under `/ext/<extension>`, from `/`. */
  path: Text(MAX_SERVICE_PATH_CHARS),
  /** The query string without `?` ("" when none). */
  query: Text(MAX_SERVICE_PATH_CHARS),
  /** Lowercase names; no Cookie, Authorization or hop-by-hop header. */
  headers: Headers,
  body: Body,
  /** How `body` is written: UTF-8 text, or base64 when it is not valid UTF-8. */
  body_encoding: v.picklist(["text", "base64"]),
});

export const ServiceAnswer = v.strictObject({
  status: v.pipe(v.number(), v.integer(), v.minValue(200), v.maxValue(599)),
  headers: v.optional(
    v.pipe(
      v.record(v.pipe(v.string(), v.maxLength(256)), Text(MAX_HEADER_CHARS)),
      v.check((h) => Object.keys(h).length <= MAX_SERVICE_HEADERS, `expected at most ${MAX_SERVICE_HEADERS} headers`),
    ),
    {},
  ),
  body: v.optional(Body, ""),
  body_encoding: v.optional(v.picklist(["text", "base64"]), "text"),
});
