/**
 * An answer as the harness would get it: what the serving loop sends (a
 * throw is `crashed` with its name and message, JSON blocks travel as text)
 * read back as the broker reads it (broker/satellite/answer.ts: a malformed
 * tool value is `crashed`; an event's JSON text is the verdict).
 */
import * as v from "valibot";
import { crashMessage, serializeJsonBlocks } from "../../cap/runtime.js";
import { MAX_ANSWER_MESSAGE } from "../../wire/codes.js";
import { ToolValue, describeIssues } from "../../wire/frames.js";
import type { Answer } from "../answer.js";

function failure(code: string, msg: string): Answer {
  return { ok: false, error: { code, msg } };
}

/** The serving loop's answer to a throw out of `answer()`. */
export function crashed(err: unknown): Answer {
  return failure("crashed", crashMessage(err));
}

/**
 * The answer of `kind` named `name` as the broker hands it on: a tool's content with JSON blocks as
 * values, an event's verdict parsed.
 */
export function asDelivered(kind: string, name: string, reply: Answer): Answer {
  if (!reply.ok) {
    const msg =
      reply.error.msg.length > MAX_ANSWER_MESSAGE
        ? `${reply.error.msg.slice(0, MAX_ANSWER_MESSAGE)}…`
        : reply.error.msg;
    return failure(reply.error.code, msg);
  }
  if (kind !== "tool" && kind !== "command") {
    // An event's verdict, or a session-facing kind's answer: JSON text the broker parses.
    if (typeof reply.value !== "string")
      return failure(
        "crashed",
        `'${name}' answered ${kind === "event" ? "an event" : kind} with ${typeof reply.value}, not JSON text`,
      );
    return { ok: true, value: JSON.parse(reply.value) as unknown };
  }
  const sent = serializeJsonBlocks(reply.value);
  if (!sent.ok) return sent;
  const parsed = v.safeParse(ToolValue, sent.value);
  if (!parsed.success)
    return failure("crashed", `'${name}' answered a malformed tool value: ${describeIssues(parsed.issues)}`);
  const content = parsed.output.content.map((block) =>
    block.type === "json" ? { type: "json", json: JSON.parse(block.json) as unknown } : block,
  );
  return { ok: true, value: { content, terminate: parsed.output.terminate } };
}
