/**
 * What a tool answers: content blocks, a terminate flag, or a refusal.
 */

/** An embedded resource: its URI and its text, or its bytes as base64 (`blob`). */
export type EmbeddedResource =
  | { uri: string; mimeType?: string; text: string }
  | { uri: string; mimeType?: string; blob: string };

/**
 * One block of a tool's reply: text the model reads, a JSON value, or an
 * image, audio or embedded resource (shaped as MCP shapes them: base64 `data`,
 * a `mimeType`). The broker checks each block whole; a block that is not
 * (bad base64, no media type) makes the call `crashed`, naming the block.
 */
export type Content =
  | { type: "text"; text: string }
  | { type: "json"; json: unknown }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: EmbeddedResource };

/**
 * Whether the agent's run goes on after this tool: a named value rather than a
 * bare boolean, so a call site says which it means.
 */
export type Terminate = "continue" | "terminate";

/** A tool's successful answer. */
export interface Outcome {
  readonly content: readonly Content[];
  readonly terminate: Terminate;
}

/**
 * A refusal is a value, not a throw: text the model reads and can repair.
 * A throw is a crash the harness reports and the model can do nothing with.
 */
export interface Refusal {
  readonly refusal: string;
}

/**
 * A text block.
 *
 * @example
 * ```ts
 * import { outcome, text } from "@tether/ext";
 * const reply = outcome([text("Sunny, 21°C")]);
 * ```
 */
export function text(value: string): Content {
  return { type: "text", text: value };
}

/**
 * A JSON block. It travels to the harness as its value; keep it to plain data.
 *
 * @example
 * ```ts
 * import { json, outcome } from "@tether/ext";
 * const reply = outcome([json({ temperature: 21 })]);
 * ```
 */
export function json(value: unknown): Content {
  return { type: "json", json: value };
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Bytes as padded base64 (written out here: it needs nothing of the runtime's globals). */
function base64Of(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i]!;
    const b = i + 1 < bytes.length ? bytes[i + 1]! : 0;
    const c = i + 2 < bytes.length ? bytes[i + 2]! : 0;
    out += BASE64[a >> 2]! + BASE64[((a & 3) << 4) | (b >> 4)]!;
    out += i + 1 < bytes.length ? BASE64[((b & 15) << 2) | (c >> 6)]! : "=";
    out += i + 2 < bytes.length ? BASE64[c & 63]! : "=";
  }
  return out;
}

/** Bytes as they are, or text already base64. */
const dataOf = (data: Uint8Array | string): string => (typeof data === "string" ? data : base64Of(data));

/**
 * An image block: its bytes (or base64 text) and its media type.
 *
 * @example
 * ```ts
 * import { image, outcome } from "@tether/ext";
 * const reply = outcome([image(await Deno.readFile("chart.png"), "image/png")]);
 * ```
 */
export function image(data: Uint8Array | string, mimeType: string): Content {
  return { type: "image", data: dataOf(data), mimeType };
}

/**
 * An audio block: its bytes (or base64 text) and its media type.
 *
 * @example
 * ```ts
 * import { audio, outcome } from "@tether/ext";
 * const wav = new Uint8Array([0x52, 0x49, 0x46, 0x46]);
 * const reply = outcome([audio(wav, "audio/wav")]);
 * ```
 */
export function audio(data: Uint8Array | string, mimeType: string): Content {
  return { type: "audio", data: dataOf(data), mimeType };
}

/**
 * An embedded resource: a URI with its text, or with its bytes.
 *
 * @example
 * ```ts
 * import { outcome, resource } from "@tether/ext";
 * const reply = outcome([resource("file:///notes.md", "# Notes", "text/markdown")]);
 * const pdf = new Uint8Array([0x25, 0x50, 0x44, 0x46]);
 * const raw = outcome([resource("tickets://42/attachment", pdf, "application/pdf")]);
 * ```
 */
export function resource(uri: string, content: string | Uint8Array, mimeType?: string): Content {
  const body = typeof content === "string" ? { text: content } : { blob: base64Of(content) };
  return { type: "resource", resource: { uri, ...(mimeType !== undefined ? { mimeType } : {}), ...body } };
}

/**
 * Builds an outcome; the run continues unless `terminate` says otherwise.
 *
 * @example
 * ```ts
 * import { outcome, text } from "@tether/ext";
 * const done = outcome([text("All files written")], { terminate: "terminate" });
 * ```
 */
export function outcome(content: readonly Content[], options: { terminate?: Terminate } = {}): Outcome {
  return { content, terminate: options.terminate ?? "continue" };
}

/**
 * A refusal the model reads.
 *
 * @example
 * ```ts
 * import { refuse } from "@tether/ext";
 * const no = refuse("City must be a real place name, e.g. \"Lisbon\"");
 * ```
 */
export function refuse(reason: string): Refusal {
  return { refusal: reason };
}

/**
 * True when a tool's answer is a refusal.
 *
 * @example
 * ```ts
 * import { isRefusal, refuse } from "@tether/ext";
 * isRefusal(refuse("no")); // true
 * ```
 */
export function isRefusal(value: unknown): value is Refusal {
  return typeof value === "object" && value !== null && typeof (value as { refusal?: unknown }).refusal === "string";
}
