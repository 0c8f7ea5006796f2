/**
 * A token from a sign-in is a secret the broker will inject: it passes the checks
 * `tether secret set` applies (broker/secrets/store.ts), or the sign-in fails
 * naming the field and why — never quoting the value.
 */
import { tokensFrom } from "../../broker/login/token-response.js";
import type { LoginRow } from "../../broker/install/login-row.js";

const ROW = { name: "github", flow: "device", token_endpoint: "https://auth.test/token" } as unknown as LoginRow;
const answer = (fields: Record<string, unknown>) => ({ token_type: "bearer", expires_in: 3600, ...fields });

test.each([
  ["too short to redact", "q7Zx9", "shorter than 8 characters"],
  ["a line break", "abcdefgh\nijkl", "printable ASCII without line breaks"],
  ["a space at its end", "abcdefghijkl ", "printable ASCII"],
  ["a control character", "abcd\u0007efghijkl", "printable ASCII"],
  ["too long", "x".repeat(9000), "longer than 8192 characters"],
])("an access token %s is refused like a secret the operator sets", (_what, token, why) => {
  let message = "";
  try {
    tokensFrom(answer({ access_token: token }), ROW, "ext", Date.now(), null);
  } catch (err) {
    message = (err as Error).message;
  }
  expect(message).toContain("access_token: expected a value fit to be sent as a secret");
  expect(message).toContain(why);
  if (token.length >= 5) expect(message).not.toContain(token.trim());
});

test("so is a refresh token; a good pair is kept", () => {
  expect(() => tokensFrom(answer({ access_token: "at-0123456789", refresh_token: "rt" }), ROW, "ext", 0, null)).toThrow(
    "refresh_token: expected a value fit to be sent as a secret",
  );
  expect(
    tokensFrom(answer({ access_token: "at-0123456789", refresh_token: "rt-0123456789" }), ROW, "ext", 0, null),
  ).toMatchObject({ access_token: "at-0123456789", refresh_token: "rt-0123456789" });
});
