/**
 * Where a satellite's answer enters the broker: never trust the extension's
 * output. A `result` frame is checked against what its invocation's kind
 * answers — the form the kinds table gives a built-in kind (a tool's or
 * command's content blocks, JSON text for the others), an added kind's
 * answer schema (jail-runtime/wire/kinds.ts) — and becomes a typed outcome;
 * a malformed answer becomes `crashed`.
 */
import * as v from "valibot";
import { MAX_ANSWER_MESSAGE, SATELLITE_ANSWER_CODES } from "../../jail-runtime/wire/codes.js";
import { DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { describeIssues, ToolValue, type WireError } from "../../jail-runtime/wire/frames.js";
import {
  BUILTIN_KINDS,
  isBuiltinKind,
  MAX_KIND_JSON,
  type AnyKind,
  type KindDefinition,
} from "../../jail-runtime/wire/kinds.js";
import { WireCode } from "../base/errors.js";
import { failure, type InvocationOutcome, type ToolContent, type ToolReply } from "../base/outcome.js";

/** The added kinds a satellite may be asked, by name: their answers are checked against these. */
export type AddedKinds = ReadonlyMap<string, KindDefinition>;

/** What the satellite answered for the invocation of `kind` named `name`, as an outcome of that kind. */
export function checkAnswer<K extends AnyKind>(
  kind: K,
  name: string,
  ok: boolean,
  value: unknown,
  error: WireError | undefined,
  added: AddedKinds = new Map(),
): InvocationOutcome<K> {
  // Each branch below builds the value `kind` answers; the union of kinds is narrowed by hand.
  return checkAny(kind, name, ok, value, error, added) as InvocationOutcome<K>;
}

function checkAny(
  kind: AnyKind,
  name: string,
  ok: boolean,
  value: unknown,
  error: WireError | undefined,
  added: AddedKinds,
): InvocationOutcome {
  if (!ok) {
    if (error === undefined) return failure(WireCode.crashed, `'${name}' answered a failure with no error`);
    // The ledger holds only outcomes the broker chose: a code outside the satellite's catalogue is a crash.
    if (!SATELLITE_ANSWER_CODES.has(error.code)) {
      return failure(
        WireCode.crashed,
        `'${name}' answered the error code '${error.code.slice(0, 64)}', which a satellite may not give`,
      );
    }
    const msg = error.msg.length > MAX_ANSWER_MESSAGE ? `${error.msg.slice(0, MAX_ANSWER_MESSAGE)}…` : error.msg;
    return { ok: false, error: { code: error.code, msg } };
  }
  if (!isBuiltinKind(kind)) {
    const definition = added.get(kind);
    if (definition === undefined)
      return failure(WireCode.crashed, `'${name}' answered kind '${kind}', which this broker does not know`);
    return checkAdded(definition, name, value);
  }
  if (BUILTIN_KINDS[kind].answer === "tool_value") {
    const parsed = v.safeParse(ToolValue, value);
    if (!parsed.success)
      return failure(WireCode.crashed, `'${name}' answered a malformed tool value: ${describeIssues(parsed.issues)}`);
    const content: ToolContent[] = [];
    for (const [i, block] of parsed.output.content.entries()) {
      if (block.type !== "json") {
        // Text, or a media block the schema checked whole (base64, media type, URI).
        content.push(block);
        continue;
      }
      try {
        content.push({ type: "json", json: parseBoundedJson(block.json) });
      } catch (err) {
        if (err instanceof DocumentBoundsError)
          return failure(WireCode.crashed, `'${name}' answered a JSON block ${err.message} at .content.${i}.json`);
        return failure(WireCode.crashed, `'${name}' answered a JSON block that is not JSON text at .content.${i}.json`);
      }
    }
    const reply: ToolReply = { content, terminate: parsed.output.terminate };
    return { ok: true, value: reply };
  }
  if (typeof value !== "string")
    return failure(WireCode.crashed, `'${name}' answered an event with ${typeof value}, not JSON text`);
  return { ok: true, value };
}

/** An added kind's answer: JSON text within MAX_KIND_JSON that its answer schema accepts; handed on as that text. */
function checkAdded(definition: KindDefinition, name: string, value: unknown): InvocationOutcome {
  const what = `${definition.name} '${name}'`;
  if (typeof value !== "string") return failure(WireCode.crashed, `${what} answered ${typeof value}, not JSON text`);
  if (value.length > MAX_KIND_JSON)
    return failure(WireCode.crashed, `${what} answered ${value.length} characters, over the ${MAX_KIND_JSON} it may`);
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(value);
  } catch (err) {
    const why = err instanceof DocumentBoundsError ? err.message : "that is not JSON text";
    return failure(WireCode.crashed, `${what} answered ${why}`);
  }
  const checked = v.safeParse(definition.answer, parsed);
  if (!checked.success)
    return failure(WireCode.crashed, `${what} answered what it may not: ${describeIssues(checked.issues)}`);
  return { ok: true, value };
}
