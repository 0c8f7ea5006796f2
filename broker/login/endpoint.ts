/**
 * One POST to an OAuth endpoint (token, device authorization, revocation): a
 * form in, a small JSON document out, bounded while it is read and decoded.
 *
 * A failure names the endpoint (origin and path: a query could hold anything)
 * and the OAuth error code. The body itself is never quoted: an
 * `error_description` is shown only when it is short, printable and repeats
 * none of this sign-in's secrets.
 */
import { parseBoundedJson, type DocumentBounds } from "../../jail-runtime/wire/document-bounds.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { SignInRefused } from "./judged-fetch.js";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

/** A token response is a handful of fields: anything larger is not one. */
export const MAX_ENDPOINT_BODY = 64 * 1024;
const BOUNDS: DocumentBounds = { maxDepth: 8, maxElements: 512 };
const TIMEOUT_MS = 30_000;

/** RFC 6749 §5.2: error codes are printable ASCII but " and \. */
const ERROR_CODE = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

/** A refusal or failure of an OAuth endpoint. `oauthCode` is the `error` it answered, when it answered one. */
export class OAuthError extends TetherError {
  constructor(
    readonly endpoint: string,
    readonly oauthCode: string | null,
    message: string,
  ) {
    super(BrokerCode.loginFailed, message);
  }
}

/** The endpoint as messages name it: origin and path, never the query. */
export function endpointName(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(an unreadable URL)";
  }
}

export interface PostOptions {
  /** What the endpoint is, for messages: "token endpoint". */
  readonly what: string;
  readonly signal?: AbortSignal;
  /** Values of this exchange a description must not repeat (codes, verifiers, tokens). */
  readonly secrets?: readonly string[];
  readonly fetch?: typeof fetch;
  /** A 2xx with an empty body is `{}` (RFC 7009: a revocation endpoint answers so). */
  readonly emptyOk?: boolean;
}

/** Reads at most `max` bytes of `res`'s body; null past it (the rest is not read). */
async function boundedText(res: Response, max: number): Promise<string | null> {
  if (res.body === null) return "";
  const reader = res.body.getReader();
  // One buffer however the server splits its answer (`HeldBytes`).
  const held = new HeldBytes(max);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!held.append(value)) {
      await reader.cancel().catch(() => {});
      return null;
    }
  }
  return bufferOf(held.view()).toString("utf8");
}

/** A description fit to show: printable, short, and repeating no secret. */
function description(raw: unknown, secrets: readonly string[]): string {
  if (typeof raw !== "string" || raw === "") return "";
  if (raw.length > 200 || !/^[\x20-\x7e]*$/.test(raw))
    return " (its description is withheld: not short printable text)";
  if (secrets.some((s) => s.length >= 4 && raw.includes(s)))
    return " (its description is withheld: it repeats a value of this sign-in)";
  return `: ${raw}`;
}

/** The `error` an endpoint answered, if it answered one in the OAuth shape. */
function errorOf(body: Record<string, unknown>): string | null {
  const error = body["error"];
  if (error === undefined) return null;
  return typeof error === "string" && ERROR_CODE.test(error) ? error : "(an unreadable error code)";
}

/**
 * POSTs `form` to `url` and answers its JSON object; throws `OAuthError` for an
 * unreachable endpoint, a redirect, a body too large or not JSON, an `error`
 * answer (whatever the status: some servers answer errors with 200), or a
 * status other than 2xx.
 */
export async function postForm(
  url: string,
  form: Readonly<Record<string, string>>,
  options: PostOptions,
): Promise<Record<string, unknown>> {
  const name = endpointName(url);
  const where = `the ${options.what} ${name}`;
  const signals = [AbortSignal.timeout(TIMEOUT_MS), ...(options.signal !== undefined ? [options.signal] : [])];
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(form).toString(),
      // An endpoint that redirects is refused, not followed: the form carries secrets.
      redirect: "manual",
      signal: AbortSignal.any(signals),
    });
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason as Error;
    if (err instanceof SignInRefused) throw new OAuthError(name, null, `${where} was not asked: ${err.message}`);
    const cause = (err as { cause?: { code?: unknown } }).cause?.code;
    const why =
      (err as Error).name === "TimeoutError"
        ? `no answer within ${TIMEOUT_MS / 1000} s`
        : typeof cause === "string"
          ? cause
          : (err as Error).message.slice(0, 120);
    throw new OAuthError(
      name,
      null,
      `could not reach ${where}: ${why}; check the address and that this machine reaches it`,
    );
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel().catch(() => {});
    throw new OAuthError(
      name,
      null,
      `${where} answered a redirect (HTTP ${res.status}); it must answer directly: check the manifest's URL`,
    );
  }
  const text = await boundedText(res, MAX_ENDPOINT_BODY);
  if (text === null)
    throw new OAuthError(
      name,
      null,
      `${where} answered HTTP ${res.status} with more than ${MAX_ENDPOINT_BODY / 1024} KiB; that is no OAuth answer`,
    );
  if (options.emptyOk === true && text.trim() === "" && res.status >= 200 && res.status < 300) return {};
  let body: unknown;
  try {
    body = parseBoundedJson(text, BOUNDS);
  } catch {
    throw new OAuthError(
      name,
      null,
      `${where} answered HTTP ${res.status} with a body that is not a JSON object ` +
        `(${text.length} bytes, not shown); check that the URL is the server's OAuth endpoint`,
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new OAuthError(
      name,
      null,
      `${where} answered HTTP ${res.status} with JSON that is not ` +
        `an object; check that the URL is the server's OAuth endpoint`,
    );
  }
  const record = body as Record<string, unknown>;
  const code = errorOf(record);
  if (code !== null) {
    throw new OAuthError(
      name,
      code,
      `${where} answered HTTP ${res.status} ${code}${description(record["error_description"], options.secrets ?? [])}`,
    );
  }
  if (res.status < 200 || res.status >= 300)
    throw new OAuthError(
      name,
      null,
      `${where} answered HTTP ${res.status} with no OAuth error code; try again later, or check the server`,
    );
  return record;
}
