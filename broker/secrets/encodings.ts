/**
 * The encodings of a secret the broker takes out of what it relays back to an
 * extension: generated from the value, not listed by hand, so the redactor and
 * the test that probes it share one set. Each is a byte string (latin1 of the
 * value's UTF-8) and whether it is matched whatever the ASCII case.
 *
 * The set: the value; base64 and base64url, padded or not, at each of the three
 * byte offsets it can sit at inside a longer encoded run (the characters that
 * depend on the value alone); hex; percent-encoding as `encodeURIComponent`,
 * as an HTML form (`+` for space), as RFC 3986 strictly (`!'()*` too) and of
 * every byte; JSON string escapes as `JSON.stringify` writes them, with `\/`,
 * and of every character (`\u00XX`); HTML character references of the special
 * characters (named) and of every character (decimal, hex). Hex, percent, JSON
 * and HTML forms and the value itself are matched case-folded (an API that
 * upper-cases the token, or writes `%2f` for `%2F`, is caught); base64 is not.
 */
export interface SecretEncoding {
  readonly name: string;
  /** Latin1 text: one character per byte. */
  readonly text: string;
  readonly anyCase: boolean;
}

const hex2 = (byte: number) => byte.toString(16).padStart(2, "0");
const latin1 = (s: string) => Buffer.from(s, "utf8").toString("latin1");

/** The base64 characters that depend on `bytes` alone when they sit at `offset` (0–2) bytes into a longer run. */
function base64Core(bytes: Buffer, offset: number, url: boolean): string {
  const full = Buffer.concat([Buffer.alloc(offset), bytes])
    .toString(url ? "base64url" : "base64")
    .replace(/=+$/, "");
  // The first group holding a prefix byte, and the last group that
  // a following byte would change, depend on more than the value.
  const skip = offset === 0 ? 0 : Math.ceil((offset * 8) / 6);
  const endBits = (offset + bytes.length) * 8;
  const keep = Math.floor(endBits / 6);
  return full.slice(skip, keep);
}

function percentEvery(bytes: Buffer): string {
  return [...bytes].map((b) => `%${hex2(b).toUpperCase()}`).join("");
}

function jsonEvery(value: string): string {
  return [...value]
    .map((c) => [...c].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`).join(""))
    .join("");
}

const HTML_NAMED: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Every encoding of `value` in the set, distinct and non-empty. */
export function secretEncodings(value: string): SecretEncoding[] {
  const bytes = Buffer.from(value, "utf8");
  const out = new Map<string, SecretEncoding>();
  const add = (name: string, text: string, anyCase: boolean) => {
    // A core too short to be the secret's own would redact ordinary text.
    if (text.length < Math.min(4, value.length)) return;
    const key = `${anyCase ? "i" : "s"}:${anyCase ? text.toLowerCase() : text}`;
    if (!out.has(key)) out.set(key, { name, text, anyCase });
  };
  add("value", latin1(value), true);
  for (const url of [false, true]) {
    const kind = url ? "base64url" : "base64";
    add(
      `${kind}, padded`,
      bytes.toString(kind === "base64url" ? "base64url" : "base64") +
        (url ? "=".repeat((3 - (bytes.length % 3)) % 3) : ""),
      false,
    );
    for (const offset of [0, 1, 2]) add(`${kind} at byte offset ${offset}`, base64Core(bytes, offset, url), false);
  }
  add("hex", bytes.toString("hex"), true);
  add("percent (encodeURIComponent)", encodeURIComponent(value), true);
  add("percent (form)", new URLSearchParams({ s: value }).toString().slice(2), true);
  add(
    "percent (RFC 3986)",
    encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${hex2(c.charCodeAt(0)).toUpperCase()}`),
    true,
  );
  add("percent (every byte)", percentEvery(bytes), true);
  const json = JSON.stringify(value).slice(1, -1);
  add("JSON", latin1(json), true);
  add("JSON with \\/", latin1(json.replace(/\//g, "\\/")), true);
  add("JSON (every character)", jsonEvery(value), true);
  add("HTML (special characters)", latin1(value.replace(/[&<>"']/g, (c) => HTML_NAMED[c]!)), true);
  add("HTML (every character, decimal)", [...value].map((c) => `&#${c.codePointAt(0)};`).join(""), true);
  add("HTML (every character, hex)", [...value].map((c) => `&#x${c.codePointAt(0)!.toString(16)};`).join(""), true);
  return [...out.values()];
}
