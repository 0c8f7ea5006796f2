/**
 * A manifest's `[[hook]]` row: the event, what a failure becomes, the time
 * limit and, for the events that have a subject, an optional `match` list so
 * the bus asks the hook only about the tools or capability calls it names
 * (docs/hooks.md, "Hook matchers").
 *
 * One variant per kind of subject, told apart by `event`: the published JSON
 * Schema then refuses a `match` where it means nothing, as parseManifest does.
 */
import * as v from "valibot";
import { EVENT_NAMES, type EventName } from "../../jail-runtime/wire/events.js";

/** Events whose subject is a tool name. */
export const TOOL_EVENTS = ["tool_call", "tool_result"] as const;
/** Events with no subject to match (every event but the tool ones and cap_call). */
const UNMATCHED = EVENT_NAMES.filter(
  (e): e is Exclude<EventName, (typeof TOOL_EVENTS)[number] | "cap_call"> =>
    e !== "cap_call" && !(TOOL_EVENTS as readonly string[]).includes(e),
);

/** Most patterns one row may list: a matcher is a short filter, not a table. */
export const MAX_PATTERNS = 32;

/** A tool name (the manifest's tool alphabet) with `*` and `?`; no spaces: hosts belong to cap_call. */
export const TOOL_PATTERN = /^[A-Za-z0-9_.*?-]{1,64}$/;
/**
 * A capability name or glob (`kv.put`, `kv.*`), or a net capability, one space
 * and a host or host glob (`net.fetch *.example.com`). Hosts are in the
 * broker's normal form (lower case, A-labels), so patterns are too.
 */
export const CAP_PATTERN = /^(?:[a-z0-9_.*?]{1,64}|net\.[a-z0-9_.*?]{1,60} [a-z0-9_.*?:-]{1,253})$/;

const common = {
  on_error: v.optional(v.picklist(["note", "block"])),
  /** The hook's time limit; past it the hook counts as failed (a note, or a block with on_error = "block"). */
  deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(600_000))),
};

function patterns(pattern: RegExp, expected: string, subjects: string) {
  return v.optional(
    v.pipe(
      v.array(v.pipe(v.string(), v.regex(pattern, expected))),
      v.minLength(1, `an empty list matches no ${subjects}: leave match out to hook every one`),
      v.maxLength(
        MAX_PATTERNS,
        `at most ${MAX_PATTERNS} patterns: cover several ${subjects} with one glob (fs_*, kv.*)`,
      ),
    ),
  );
}

const ToolHook = v.strictObject({
  event: v.picklist(TOOL_EVENTS),
  ...common,
  match: patterns(
    TOOL_PATTERN,
    "expected a tool name or glob: letters, digits, _ . - with * (any run) and " +
      "? (one character), at most 64 characters; hosts go in cap_call hooks only",
    "tools",
  ),
});

const CapHook = v.strictObject({
  event: v.literal("cap_call"),
  ...common,
  match: patterns(
    CAP_PATTERN,
    "expected a capability or glob (kv.put, kv.*), or net.<name>, one space and a host or host glob " +
      "(net.fetch *.example.com): lower case a-z 0-9 _ . - : with * and ?, at most 64 + 253 characters",
    "capability calls",
  ),
});

/** An unknown key keeps valibot's words; `match` says which events take it. */
function unmatchedKey(issue: v.StrictObjectIssue): string {
  if (issue.expected === "never" && issue.input === "match") {
    const event = (issue.path?.[0]?.input as { event?: unknown } | undefined)?.event;
    return (
      `a '${String(event)}' hook has no subject to match; match ` +
      `is for tool_call, tool_result and cap_call hooks: remove it`
    );
  }
  return (
    `Invalid ${issue.expected === "never" ? "key" : "type"}: ` +
    `Expected ${issue.expected} but received ${issue.received}`
  );
}

const UnmatchedHook = v.strictObject({ event: v.picklist(UNMATCHED), ...common }, unmatchedKey);

/** The events listed in manifest order, as a plain picklist would (not grouped by variant). */
const EVENTS_EXPECTED = `(${EVENT_NAMES.map((e) => `"${e}"`).join(" | ")})`;

export const HookRow = v.variant(
  "event",
  [ToolHook, CapHook, UnmatchedHook],
  (issue) =>
    `Invalid type: Expected ${issue.expected === "Object" ? "Object" : EVENTS_EXPECTED} but received ${issue.received}`,
);
export type HookRow = v.InferOutput<typeof HookRow>;

/** A row's match list; undefined: every subject. */
export function matchOf(row: HookRow): readonly string[] | undefined {
  return "match" in row ? row.match : undefined;
}
