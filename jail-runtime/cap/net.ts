/**
 * `net.fetch`: the satellite has no network; the broker makes the request,
 * judged against the approved rules, and hands back the response.
 */
import { callCap } from "./invocation.js";
import { toBase64 } from "./base64.js";

export interface FetchInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>> | ReadonlyArray<readonly [string, string]>;
  readonly body?: string | Uint8Array | null;
  /**
   * A secret of this extension's manifest (`[[secret]]`), by name: the broker
   * adds its value to the request (the header or query parameter the manifest
   * names) when the URL is under a rule it is bound to. The extension never
   * sees the value: it is `[secret]` in anything that comes back.
   */
  readonly secret?: string;
}

/**
 * A brokered response: the whole body, already read (bounded by the operator's policy).
 *
 * @example
 * ```ts
 * import { net } from "@tether/cap";
 * const res = await net.fetch("https://api.example.com/v1/status");
 * const type = res.header("content-type");
 * const data = res.ok ? res.json() : null;
 * ```
 */
export class FetchResult {
  constructor(
    readonly status: number,
    readonly url: string,
    readonly headers: ReadonlyArray<readonly [string, string]>,
    readonly body: Uint8Array,
  ) {}

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  /** The first value of a header (names are case-insensitive), or null. */
  header(name: string): string | null {
    const key = name.toLowerCase();
    return this.headers.find(([n]) => n === key)?.[1] ?? null;
  }

  text(): string {
    return new TextDecoder().decode(this.body);
  }

  json(): unknown {
    return JSON.parse(this.text());
  }
}

/**
 * Fetches a URL through the broker. Rejects with `CapError` (code `denied`,
 * the message naming the rule) when policy refuses it.
 *
 * @example
 * ```ts
 * import { net } from "@tether/cap";
 * const res = await net.fetch("https://api.example.com/v1/weather?city=Lisbon");
 * if (res.ok) console.log(res.json());
 * // With a secret the operator set (the manifest's [[secret]] "weather_key"):
 * const auth = await net.fetch("https://api.example.com/v1/account", { secret: "weather_key" });
 * ```
 */
export async function fetch(url: string, init: FetchInit = {}): Promise<FetchResult> {
  const headers = Array.isArray(init.headers) ? init.headers : Object.entries(init.headers ?? {});
  const body =
    init.body === undefined || init.body === null
      ? null
      : toBase64(typeof init.body === "string" ? new TextEncoder().encode(init.body) : init.body);
  const secret = init.secret === undefined ? {} : { secret: String(init.secret) };
  const value = (await callCap("net.fetch", {
    url: String(url),
    method: init.method ?? "GET",
    headers,
    body,
    ...secret,
  })) as {
    status: number;
    url: string;
    headers: Array<[string, string]>;
    body: Uint8Array;
  };
  return new FetchResult(value.status, value.url, value.headers, value.body);
}
