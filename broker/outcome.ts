/**
 * Reading a tool's outcome as a harness does: the reply's content blocks, or
 * one line of text for a person or a model.
 */
import type { InvocationOutcome, ToolContent, ToolReply } from "./satellite/process.js";

function isContent(value: unknown): value is ToolContent {
  if (typeof value !== "object" || value === null) return false;
  const block = value as { type?: unknown; text?: unknown };
  return (block.type === "text" && typeof block.text === "string") || (block.type === "json" && "json" in block);
}

/** The tool's reply (content blocks and `terminate`), or null for a failure or a value that is not one. */
export function replyOf(outcome: InvocationOutcome): ToolReply | null {
  if (!outcome.ok) return null;
  const value = outcome.value as { content?: unknown; terminate?: unknown } | null;
  if (typeof value !== "object" || value === null || !Array.isArray(value.content) || !value.content.every(isContent)) return null;
  return { content: value.content, terminate: value.terminate === true };
}

/**
 * One line: text blocks as they are and JSON blocks as JSON, joined by " | ";
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
  return reply.content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json))).join(" | ");
}
