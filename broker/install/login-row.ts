/**
 * A manifest's `[[login]]` row: an OAuth sign-in the broker runs for the
 * extension (docs/login.md). The tokens it obtains fill the `[[secret]]` the row
 * names; the jail never sees them.
 *
 * One variant per flow, told apart by `flow`: a device login names its device
 * authorization endpoint, an authorization-code login its authorization
 * endpoint, and neither takes the other's.
 */
import * as v from "valibot";

export const LOGIN_FLOWS = ["device", "authorization_code"] as const;
export type LoginFlow = (typeof LOGIN_FLOWS)[number];

const Identifier = v.pipe(
  v.string(),
  v.regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "expected a lowercase name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
  ),
);

/**
 * https, or http to a loopback address only (a test server on this machine).
 * The regex is what the published schema can say; `endpointProblem` checks the rest.
 */
const ENDPOINT =
  /^(?:https:\/\/[^\s/?#@]+|http:\/\/(?:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])(?::\d{1,5})?)(?:\/[^\s#]*)?$/;
const Endpoint = v.pipe(
  v.string(),
  v.maxLength(2048),
  v.regex(
    ENDPOINT,
    "expected an https:// URL (http:// only to a loopback address: " +
      "127.0.0.1, [::1], localhost), with no user, password or #fragment",
  ),
);

/** RFC 6749 §3.3: a scope token is printable ASCII but space, " and \. */
const Scope = v.pipe(
  v.string(),
  v.regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,256}$/, 'expected one scope token: printable ASCII without spaces, " or \\'),
);

/**
 * What the authorization server knows this client by (public
 * clients only: PKCE or the device grant, no client secret).
 */
const ClientId = v.pipe(
  v.string(),
  v.regex(
    /^[\x21-\x7e]{1,512}$/,
    "expected the client id the authorization server issued: printable ASCII without spaces, at most 512",
  ),
);

const common = {
  name: Identifier,
  description: v.pipe(v.string(), v.maxLength(4096)),
  client_id: ClientId,
  token_endpoint: Endpoint,
  /** RFC 7009: called on logout when declared. */
  revocation_endpoint: v.optional(Endpoint),
  scopes: v.optional(v.pipe(v.array(Scope), v.maxLength(64, "at most 64 scopes")), []),
  /** The `[[secret]]` the access token fills. */
  secret: Identifier,
  /**
   * Endpoints on more than one origin, said on purpose (the
   * token endpoint gets the operator's code and PKCE verifier).
   */
  cross_origin: v.optional(v.boolean(), false),
};

function wrongKey(flow: LoginFlow, other: string) {
  return (issue: v.StrictObjectIssue): string => {
    if (issue.expected === "never" && issue.input === other)
      return `a '${flow}' login does not take ${other}: remove it (or change flow)`;
    return (
      `Invalid ${issue.expected === "never" ? "key" : "type"}: ` +
      `Expected ${issue.expected} but received ${issue.received}`
    );
  };
}

const DeviceLogin = v.strictObject(
  { flow: v.literal("device"), ...common, device_authorization_endpoint: Endpoint },
  wrongKey("device", "authorization_endpoint"),
);

const CodeLogin = v.strictObject(
  { flow: v.literal("authorization_code"), ...common, authorization_endpoint: Endpoint },
  wrongKey("authorization_code", "device_authorization_endpoint"),
);

export const LoginRow = v.variant("flow", [DeviceLogin, CodeLogin], (issue) =>
  issue.expected === "Object"
    ? `Invalid type: Expected Object but received ${issue.received}`
    : `expected flow = "device" or "authorization_code", got ${issue.received}`,
);
export type LoginRow = v.InferOutput<typeof LoginRow>;

const LOOPBACK_HOSTS = new Set(["localhost", "[::1]"]);

/** What is wrong with an endpoint the regex let through, or null (the URL parser has the last word). */
export function endpointProblem(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "not a URL";
  }
  if (url.username !== "" || url.password !== "") return "a URL with a user or password: remove them";
  if (url.hash !== "") return "a URL with a #fragment: remove it";
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:" && (LOOPBACK_HOSTS.has(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname)))
    return null;
  return "expected https:// (http:// only to a loopback address)";
}

/** Every endpoint a row names, by field. */
export function endpointsOf(row: LoginRow): Array<[string, string]> {
  const out: Array<[string, string]> = [["token_endpoint", row.token_endpoint]];
  if (row.flow === "device") out.push(["device_authorization_endpoint", row.device_authorization_endpoint]);
  else out.push(["authorization_endpoint", row.authorization_endpoint]);
  if (row.revocation_endpoint !== undefined) out.push(["revocation_endpoint", row.revocation_endpoint]);
  return out;
}

/** The origins a row's endpoints are on, in the order `endpointsOf` names them. */
export function originsOf(row: LoginRow): string[] {
  const origins: string[] = [];
  for (const [, url] of endpointsOf(row)) {
    try {
      const origin = new URL(url).origin;
      if (!origins.includes(origin)) origins.push(origin);
    } catch {
      // endpointProblem refuses it
    }
  }
  return origins;
}
