/**
 * The redactor against the generated set of a secret's encodings
 * (broker/secrets/encodings.ts): every encoding of several kinds of token, at
 * the start, middle and end of a body, in either case where it is matched
 * so, and base64 runs holding the token at each byte offset: none comes back.
 */
import { randomBytes } from "node:crypto";
import { Redactor, REDACTED } from "../../broker/secrets/redact.js";
import { secretEncodings } from "../../broker/secrets/encodings.js";

const TOKENS: Record<string, string> = {
  hex: randomBytes(20).toString("hex"),
  "base64 with + / =": `${randomBytes(18).toString("base64")}+/=`,
  "JWT-like": `eyJ${randomBytes(12).toString("base64url")}.${randomBytes(12).toString("base64url")}`,
  "with escapable characters": `s3cr3t/&<>"'\\ ${randomBytes(6).toString("hex")}`,
  "non-ASCII": `clé-${randomBytes(8).toString("hex")}-ü`,
};

/** The token given back in the raw bytes: any encoding of the set (folded where matched so), or any base64 run decoding to it. */
function leaked(token: string, out: Buffer): string[] {
  const text = out.toString("latin1");
  const found = secretEncodings(token)
    .filter((e) => (e.anyCase ? text.toLowerCase().includes(e.text.toLowerCase()) : text.includes(e.text)))
    .map((e) => e.name);
  for (const run of text.match(/[A-Za-z0-9+/_-]{8,}={0,2}/g) ?? []) {
    for (const kind of ["base64", "base64url"] as const)
      if (Buffer.from(run, kind).includes(Buffer.from(token))) found.push(`${kind} run`);
  }
  return found;
}

const redact = (token: string, body: Buffer) => {
  const r = new Redactor();
  r.add(token, `Bearer ${token}`);
  return Buffer.from(r.bytes(body));
};

describe.each(Object.entries(TOKENS))("a %s token", (_kind, token) => {
  const forms = secretEncodings(token);
  const flip = (s: string) =>
    s.replace(/[a-zA-Z]/g, (c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()));

  test("its encodings are many and distinct", () => {
    expect(forms.length).toBeGreaterThanOrEqual(8);
    expect(new Set(forms.map((f) => f.text)).size).toBe(forms.length);
  });

  test.each(forms.map((f) => [f.name, f] as const))("%s, anywhere in a body, is [secret]", (_name, form) => {
    const variants = form.anyCase ? [form.text, form.text.toUpperCase(), flip(form.text)] : [form.text];
    for (const text of variants) {
      for (const body of [text, `before ${text}`, `${text} after`, `a${text}b${text}c`]) {
        const out = redact(token, Buffer.from(body, "latin1"));
        expect(out.toString("latin1")).toContain(REDACTED);
        expect(leaked(token, out)).toEqual([]);
      }
    }
  });

  test.each([0, 1, 2, 3, 4, 5])("inside a base64 and a base64url run at byte offset %i", (offset) => {
    for (const kind of ["base64", "base64url"] as const) {
      const run = Buffer.concat([randomBytes(offset), Buffer.from(token), randomBytes(7)]).toString(kind);
      expect(leaked(token, Buffer.from(run))).not.toEqual([]);
      expect(leaked(token, redact(token, Buffer.from(`x=${run}&`)))).toEqual([]);
    }
  });

  test("a body with none of it is returned as it was, byte for byte", () => {
    const body = randomBytes(4096);
    expect(redact(token, body).equals(body)).toBe(true);
  });
});
