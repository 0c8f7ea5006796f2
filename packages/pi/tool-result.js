/**
 * A `tool.call` report as pi's tool result: ok content becomes text (and
 * image) blocks — audio and binary resources named, not pasted as base64 —,
 * a failure an error pi shows the model (`<code>: <msg>`, no stack), and the
 * hooks' `context` rides along as text for the model.
 */

/** What the model is shown of one JSON block, at most. */
const MAX_JSON_CHARS = 256 * 1024;

/**
 * pi's content blocks for a tool value's blocks.
 * @param {ReadonlyArray<Record<string, unknown> & { type: string }>} blocks
 * @returns {Array<{ type: "text", text: string } | { type: "image", data: string, mimeType: string }>}
 */
export function piContent(blocks) {
  return blocks.map((block) => {
    if (block.type === "text" && typeof block.text === "string") return { type: "text", text: block.text };
    if (block.type === "image" && typeof block.data === "string" && typeof block.mimeType === "string")
      return { type: "image", data: block.data, mimeType: block.mimeType };
    const resource =
      block.type === "resource"
        ? /** @type {{ uri?: unknown, text?: unknown, blob?: unknown }} */ (block.resource)
        : undefined;
    if (typeof resource?.text === "string") return { type: "text", text: resource.text };
    // pi's models read text and images: other bytes are named, never pasted in as base64.
    if (block.type === "audio" && typeof block.mimeType === "string")
      return { type: "text", text: `[audio ${block.mimeType}]` };
    if (typeof resource?.blob === "string") return { type: "text", text: `[resource ${String(resource.uri)}]` };
    const json = block.type === "json" && "json" in block ? block.json : block;
    return { type: "text", text: JSON.stringify(json).slice(0, MAX_JSON_CHARS) };
  });
}

/** A failure pi reports to the model as the tool's error (pi takes the message of what `execute` throws). */
export class ToolFailure extends Error {
  /**
   * @param {string} code
   * @param {string} msg
   */
  constructor(code, msg) {
    super(`${code}: ${msg}`);
    this.name = "ToolFailure";
    // No stack: pi shows only the message, and a stack says nothing to the model.
    this.stack = `${this.name}: ${this.message}`;
  }
}

/**
 * The pi result for `report`, or a thrown ToolFailure.
 * @param {import("./answers.js").ToolCallReport} report
 */
export function piToolResult(report) {
  const context = report.context.map((text) => ({ type: /** @type {const} */ ("text"), text }));
  if (!report.outcome.ok) {
    const { code, msg } = report.outcome.error;
    const more = report.context.length > 0 ? `\n${report.context.join("\n")}` : "";
    throw new ToolFailure(code, `${msg}${more}`);
  }
  return {
    content: [...piContent(report.outcome.value.content), ...context],
    details: {
      extension: report.extension,
      call_id: report.call_id,
      invocation_id: report.invocation_id,
    },
    // A hook's halt ends the turn as a terminating tool does.
    terminate: report.outcome.value.terminate || report.halt !== null,
  };
}
