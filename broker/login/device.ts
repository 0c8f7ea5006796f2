/**
 * The device authorization grant (RFC 8628): ask for a device code and a user
 * code, show the operator where to enter it, then poll the token endpoint every
 * `interval` seconds — `authorization_pending` keeps polling, `slow_down` adds
 * 5 s, `expired_token` and `access_denied` end it.
 */
import * as v from "valibot";
import { BrokerCode, TetherError } from "../base/errors.js";
import { endpointProblem, type LoginRow } from "../install/login-row.js";
import { endpointName, OAuthError, postForm } from "./endpoint.js";
import type { FlowOptions, Started } from "./flow.js";
import { tokensFrom } from "./token-response.js";

type DeviceRow = Extract<LoginRow, { flow: "device" }>;

export const GRANT_DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code";
/** RFC 8628 §3.2: the interval when the server names none. */
const DEFAULT_INTERVAL_S = 5;
/** RFC 8628 §3.5: what `slow_down` adds. */
const SLOW_DOWN_S = 5;

const Uri = v.pipe(
  v.string(),
  v.maxLength(2048),
  v.check((s) => endpointProblem(s) === null, "an https:// URL (http:// only to a loopback address)"),
);

const DeviceAnswer = v.object({
  device_code: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  user_code: v.pipe(v.string(), v.regex(/^[\x21-\x7e]{1,64}$/, "printable ASCII, at most 64")),
  // `verification_url` is an older spelling some servers still answer.
  verification_uri: v.optional(Uri),
  verification_url: v.optional(Uri),
  verification_uri_complete: v.optional(Uri),
  expires_in: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400)),
  interval: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3600))),
});

export async function startDevice(row: DeviceRow, extension: string, options: FlowOptions): Promise<Started> {
  const fetchOption = options.fetch !== undefined ? { fetch: options.fetch } : {};
  const answer = await postForm(
    row.device_authorization_endpoint,
    { client_id: row.client_id, ...(row.scopes.length > 0 ? { scope: row.scopes.join(" ") } : {}) },
    {
      what: "device authorization endpoint",
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      ...fetchOption,
    },
  );
  const parsed = v.safeParse(DeviceAnswer, answer);
  const where = `the device authorization endpoint ${endpointName(row.device_authorization_endpoint)}`;
  if (!parsed.success) {
    const fields = parsed.issues
      .map((issue) => `${v.getDotPath(issue) ?? "(top level)"}: expected ${issue.expected ?? "another value"}`)
      .join("; ");
    throw new OAuthError(
      endpointName(row.device_authorization_endpoint),
      null,
      `${where} answered no usable device code: ${fields.slice(0, 300)}`,
    );
  }
  const d = parsed.output;
  const verificationUri = d.verification_uri ?? d.verification_url;
  if (verificationUri === undefined)
    throw new OAuthError(
      endpointName(row.device_authorization_endpoint),
      null,
      `${where} answered no verification_uri`,
    );

  const started = options.clock.now();
  const deadline = started + d.expires_in * 1000;
  const done = (async () => {
    // At least a second: a server answering 0 must not turn the wait into a busy loop of requests.
    let interval = Math.max(1, d.interval ?? DEFAULT_INTERVAL_S) * 1000;
    for (let polls = 1; ; polls++) {
      await options.clock.sleep(interval, options.signal);
      if (options.clock.now() >= deadline) {
        throw new TetherError(
          BrokerCode.loginFailed,
          `the user code expired after ${d.expires_in} s without ` +
            `a sign-in at ${verificationUri}; run tether login again`,
        );
      }
      try {
        const tokens = await postForm(
          row.token_endpoint,
          { grant_type: GRANT_DEVICE_CODE, device_code: d.device_code, client_id: row.client_id },
          {
            what: "token endpoint",
            secrets: [d.device_code],
            ...(options.signal !== undefined ? { signal: options.signal } : {}),
            ...fetchOption,
          },
        );
        return tokensFrom(tokens, row, extension, options.clock.now(), null);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        switch (err.oauthCode) {
          case "authorization_pending":
            options.progress?.(`waiting for the sign-in at ${verificationUri} (poll ${polls})`);
            continue;
          case "slow_down":
            interval += SLOW_DOWN_S * 1000;
            options.progress?.(`the server asked to poll more slowly: every ${interval / 1000} s`);
            continue;
          case "expired_token":
            throw new TetherError(
              BrokerCode.loginFailed,
              `the user code expired (${err.message}); run tether login again`,
            );
          case "access_denied":
            throw new TetherError(
              BrokerCode.loginFailed,
              `the sign-in was declined at ${verificationUri} (access_denied); run tether login again to retry`,
            );
          default:
            throw err;
        }
      }
    }
  })();
  return {
    prompt: {
      flow: "device",
      verificationUri,
      verificationUriComplete: d.verification_uri_complete ?? null,
      userCode: d.user_code,
      authorizationUrl: null,
      redirectUri: null,
      expiresIn: d.expires_in,
    },
    done,
  };
}
