/**
 * The broker ⇄ satellite frames, defined once as valibot schemas.
 *
 * Plain TypeScript with no runtime-specific imports: the broker (Node) and the
 * capability prelude (Deno) both import this file. Field `t` names the frame.
 */
import * as v from "valibot";
import { AudioBlock, ImageBlock, ResourceBlock } from "./media-blocks.js";
import { ADDED_KIND_MARK, AddedKindOnWire, BUILTIN_KIND_NAMES, ServedKinds } from "./kinds.js";
import { WIRE_VERSION } from "./version.js";

const Id = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));
const Name = v.pipe(v.string(), v.maxLength(256));
const Token = v.pipe(v.string(), v.maxLength(128));

export const WireError = v.object({
  code: Name,
  msg: v.pipe(v.string(), v.maxLength(64 * 1024)),
});
export type WireError = v.InferOutput<typeof WireError>;

/**
 * The satellite runtime's name and the version of this wire protocol, as its
 * `hello` says them (`tether --version` prints it). Bumped when a frame changes
 * in a way an older peer would misread.
 */
export const RUNTIME_NAME = `tether-deno/${WIRE_VERSION}`;

/**
 * The most invocations a satellite holds open at once (the manifest's `[limits] concurrency`
 * cannot ask more); a `call` past it is answered `busy`.
 */
export const MAX_OPEN_INVOCATIONS = 16;

/** S→B, first frame: proves the boot token and says what the artifact serves. */
export const Hello = v.object({
  t: v.literal("hello"),
  boot: Token,
  runtime: Name,
  tools: v.pipe(v.array(Name), v.maxLength(1024)),
  hooks: v.pipe(v.array(Name), v.maxLength(1024)),
  commands: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  /** Context loaders, host routes and compaction strategies it serves, by name. */
  contexts: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  routes: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  compactions: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  /** Model providers it serves, by name. */
  providers: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  /** HTTP services it serves, by name. */
  services: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  /** Search providers it serves (`[[search]]`), by name. */
  searches: v.optional(v.pipe(v.array(Name), v.maxLength(1024)), []),
  /**
   * Which session handlers its module exports: `prepare` and `close` (managed), `observe`, `init`
   * (its initializer).
   */
  handles: v.optional(v.pipe(v.array(v.picklist(["prepare", "close", "observe", "init"])), v.maxLength(4)), []),
  /** The kinds added beside the built-ins (./kinds.ts) it serves, each with its names. */
  kinds: v.optional(ServedKinds),
});
export type Hello = v.InferOutput<typeof Hello>;

/** What names one invocation's frames: its id, and the token only it holds. */
const Invocation = { id: Id, token: Token };

/** The built-in kinds, the keys of the kinds table (./kinds.ts). */
export const CallKind = v.picklist(BUILTIN_KIND_NAMES);
export type CallKind = v.InferOutput<typeof CallKind>;

/** B→S: answer this invocation. `args` is JSON text, the exact bytes the caller sent. */
export const Call = v.object({
  t: v.literal("call"),
  ...Invocation,
  /**
   * A built-in kind, or one added beside them as `+<name>` (./kinds.ts; the satellite answers
   * `bad_kind` if it serves none).
   */
  kind: v.lazy((input) =>
    typeof input === "string" && input.startsWith(ADDED_KIND_MARK) ? AddedKindOnWire : CallKind,
  ),
  name: Name,
  args: v.string(),
  strand: v.string(),
  deadline_ms: Id,
});
export type Call = v.InferOutput<typeof Call>;

/** S→B: reach a capability inside the open invocation. `args` is JSON text (see JsonBlock for why). */
export const Cap = v.object({ t: v.literal("cap"), ...Invocation, cap: Name, args: v.string() });
export type Cap = v.InferOutput<typeof Cap>;

/** What an answer carries, either way: the id it answers, and a value or an error. */
const Answer = { id: Id, ok: v.boolean(), value: v.optional(v.unknown()), error: v.optional(WireError) };

/** B→S: the answer to one `cap`. */
export const CapResult = v.object({ t: v.literal("cap_result"), ...Answer });
export type CapResult = v.InferOutput<typeof CapResult>;

export const TextBlock = v.object({ type: v.literal("text"), text: v.string() });
/**
 * A JSON block travels as its serialization (JSON text), not as a msgpack map:
 * a round trip through two structured encodings is a place for the two sides to
 * disagree (numbers, `__proto__` keys, which msgpackr renames).
 */
export const JsonBlock = v.object({ type: v.literal("json"), json: v.string() });
/** Text, JSON, or a media block (media-blocks.ts: image, audio, embedded resource). */
export const ContentBlock = v.variant("type", [TextBlock, JsonBlock, ImageBlock, AudioBlock, ResourceBlock]);
export type ContentBlock = v.InferOutput<typeof ContentBlock>;

/** A tool's successful value on the wire: content blocks and whether the run should end. */
export const ToolValue = v.object({
  content: v.array(ContentBlock),
  terminate: v.boolean(),
});
export type ToolValue = v.InferOutput<typeof ToolValue>;

/** S→B: the one terminal frame of an invocation. */
export const Result = v.object({ t: v.literal("result"), ...Answer });
export type Result = v.InferOutput<typeof Result>;

/** B→S: best effort; the tool's `ctx.signal` aborts. */
export const Cancel = v.object({ t: v.literal("cancel"), id: Id });
export type Cancel = v.InferOutput<typeof Cancel>;

/** Frames a satellite may send. */
export const SatelliteFrame = v.variant("t", [Hello, Cap, Result]);
export type SatelliteFrame = v.InferOutput<typeof SatelliteFrame>;

/** Frames the broker may send. */
export const BrokerFrame = v.variant("t", [Call, CapResult, Cancel]);
export type BrokerFrame = v.InferOutput<typeof BrokerFrame>;

/** Renders valibot issues as one line that names each field, e.g. `expected string at .city`. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  // Bounded: a peer's value is quoted in valibot's messages, and these messages
  // end up in answers and logs.
  const text = issues
    .slice(0, 8)
    .map((issue) => {
      const path = v.getDotPath(issue);
      const message = issue.message.length > 200 ? `${issue.message.slice(0, 200)}…` : issue.message;
      return `${message}${path ? ` at .${path.slice(0, 200)}` : ""}`;
    })
    .join("; ");
  return issues.length > 8 ? `${text}; and ${issues.length - 8} more` : text;
}
