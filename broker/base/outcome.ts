/**
 * What an invocation comes to, typed by its kind: a tool's or a command's
 * success carries a `ToolReply`, a hook's (an event's) its verdict as JSON
 * text. The satellite layer checks what a satellite answers before it becomes
 * one of these (see broker/satellite/answer.ts), so nothing here inspects a
 * value at run time to learn what it is.
 *
 * Also: reading an outcome as a harness does, the reply's content blocks or
 * one line of text for a person or a model.
 */
import type { WireError } from "../../jail-runtime/wire/frames.js";
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import type { MediaBlock } from "../../jail-runtime/wire/media-blocks.js";

/**
 * A content block as the broker hands it to callers: text, a JSON block
 * parsed, or an image, audio or embedded resource as MCP shapes them
 * (base64 `data` / `blob`, `mimeType`).
 */
export type ToolContent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "json"; readonly json: unknown }
  | MediaBlock;

/** A tool's or command's successful value, as callers receive it. */
export interface ToolReply {
  readonly content: readonly ToolContent[];
  readonly terminate: boolean;
}

/** What a successful invocation of each kind answers. */
export interface SuccessValues {
  readonly tool: ToolReply;
  readonly command: ToolReply;
  /** A hook's verdict, JSON text (checked against its event's schema by the hook bus). */
  readonly event: string;
  /**
   * The session-facing kinds (jail-runtime/wire/session-kinds.ts):
   * the answer as JSON text, checked by the broker part that asked.
   */
  readonly context: string;
  readonly prepare: string;
  readonly close: string;
  readonly observe: string;
  readonly route: string;
  readonly compact: string;
  /** A provider's completion (jail-runtime/wire/provider-kinds.ts), JSON text like the others. */
  readonly complete: string;
  /** A service's HTTP response (jail-runtime/wire/service-kinds.ts), JSON text. */
  readonly service: string;
  /** An initializer's answer (`{ message? }`), JSON text. */
  readonly init: string;
}

/**
 * What a successful invocation of `K` answers: a built-in kind's value, or an
 * added kind's answer as JSON text (checked against its schema).
 */
export type SuccessValue<K extends AnyKind> = K extends keyof SuccessValues ? SuccessValues[K] : string;

/** How any invocation can fail: a code and a message. */
export interface Failure {
  readonly ok: false;
  readonly error: WireError;
}

/** The outcome of an invocation of kind `K` (any kind by default). */
export type InvocationOutcome<K extends AnyKind = AnyKind> =
  | { readonly ok: true; readonly value: SuccessValue<K> }
  | Failure;

/** A failed outcome with `code` and `msg`. */
export function failure(code: string, msg: string): Failure {
  return { ok: false, error: { code, msg } };
}

/** The tool's or command's reply (content blocks and `terminate`), or null for a failure or a hook's verdict. */
export function replyOf(outcome: InvocationOutcome): ToolReply | null {
  if (!outcome.ok || typeof outcome.value === "string") return null;
  return { content: outcome.value.content, terminate: outcome.value.terminate };
}

/** How many bytes a base64 text holds. */
function decodedBytes(base64: string): number {
  return (base64.length / 4) * 3 - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0);
}

/**
 * One block as text for a person or a log: text as it is, JSON as JSON, a
 * text resource as its text; binary data only named (`[image image/png, 120 bytes]`).
 */
export function blockText(block: ToolContent): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "json":
      return JSON.stringify(block.json) ?? "null";
    case "image":
    case "audio":
      return `[${block.type} ${block.mimeType}, ${decodedBytes(block.data)} bytes]`;
    case "resource": {
      const { resource } = block;
      if ("text" in resource) return resource.text;
      const type = resource.mimeType !== undefined ? ` ${resource.mimeType}` : "";
      return `[resource ${resource.uri}${type}, ${decodedBytes(resource.blob)} bytes]`;
    }
  }
}

/**
 * One line: each block as `blockText` renders it, joined by " | ";
 * a failure as `error <code>: <message>`.
 *
 * @example
 * ```ts
 * textOf({ ok: false, error: { code: "blocked", msg: "no" } }); // "error blocked: no"
 * ```
 */
export function textOf(outcome: InvocationOutcome): string {
  if (!outcome.ok) return `error ${outcome.error.code}: ${outcome.error.msg}`;
  const reply = replyOf(outcome);
  if (reply === null) return JSON.stringify(outcome.value) ?? "";
  return reply.content.map(blockText).join(" | ");
}
