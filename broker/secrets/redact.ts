/**
 * Keeps an injected secret from coming back to the extension: every form the
 * broker can recognise — the value, its formatted form, each percent-encoded
 * as a query would carry it, and the value's base64 — is replaced with
 * `[secret]` in what a response hands back (headers, body, a redirect's
 * Location) and in failure messages. An API that reflects the secret in
 * another form (hashed, split, re-encoded) is not caught: docs/secrets.md.
 */
export const REDACTED = "[secret]";

export class Redactor {
  /** Longest first, so a formatted form is replaced whole rather than around its value. */
  #forms: string[] = [];
  #bytes: Buffer[] = [];
  readonly #replacement = Buffer.from(REDACTED);

  /** Adds a value and the form it was sent in. */
  add(value: string, sent: string): void {
    const forms = new Set<string>();
    for (const text of [value, sent]) {
      forms.add(text);
      forms.add(encodeURIComponent(text));
      forms.add(new URLSearchParams({ s: text }).toString().slice(2));
    }
    forms.add(Buffer.from(value).toString("base64"));
    for (const form of forms) if (form !== "" && !this.#forms.includes(form)) this.#forms.push(form);
    this.#forms.sort((a, b) => b.length - a.length);
    this.#bytes = this.#forms.map((f) => Buffer.from(f));
  }

  get empty(): boolean {
    return this.#forms.length === 0;
  }

  text(s: string): string {
    let out = s;
    for (const form of this.#forms) out = out.split(form).join(REDACTED);
    return out;
  }

  bytes(body: Uint8Array): Uint8Array {
    let out = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    for (const needle of this.#bytes) out = replaceAll(out, needle, this.#replacement);
    return out;
  }
}

function replaceAll(haystack: Buffer, needle: Buffer, replacement: Buffer): Buffer {
  let at = haystack.indexOf(needle);
  if (at === -1) return haystack;
  const parts: Buffer[] = [];
  let from = 0;
  while (at !== -1) {
    parts.push(haystack.subarray(from, at), replacement);
    from = at + needle.length;
    at = haystack.indexOf(needle, from);
  }
  parts.push(haystack.subarray(from));
  return Buffer.concat(parts);
}
