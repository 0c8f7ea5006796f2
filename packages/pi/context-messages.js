/**
 * The conversation a Tether `context` hook hands back, as pi messages. Hooks
 * see pi's own messages and may return them changed; a message in another
 * shape (`{role: "system", content: "…"}`, the common chat form) becomes a pi
 * custom message, which pi sends the model as user text. A list with anything
 * else in it is not used: pi's own conversation goes out unchanged.
 */

/** The roles pi's AgentMessage has (pi-coding-agent's session format). */
const PI_ROLES = new Set([
  "user",
  "assistant",
  "toolResult",
  "custom",
  "bashExecution",
  "branchSummary",
  "compactionSummary",
]);

/** The `customType` of every message this extension adds. */
export const CUSTOM_TYPE = "tether";

/**
 * A pi custom message carrying `text` for the model (not shown in pi's UI).
 * @param {string} text
 */
export function tetherMessage(text) {
  return { role: "custom", customType: CUSTOM_TYPE, content: text, display: false, timestamp: Date.now() };
}

/**
 * pi messages for `messages`, or null when one of them cannot be one.
 * @param {readonly unknown[]} messages
 * @returns {unknown[] | null}
 */
export function piMessages(messages) {
  const out = [];
  for (const message of messages) {
    if (typeof message !== "object" || message === null || Array.isArray(message)) return null;
    const { role, content } = /** @type {Record<string, unknown>} */ (message);
    if (typeof role !== "string") return null;
    if (PI_ROLES.has(role) && (role !== "user" || typeof content !== "string")) out.push(message);
    else if (typeof content === "string") out.push(tetherMessage(content));
    else return null;
  }
  return out;
}
