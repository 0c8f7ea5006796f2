/**
 * What a hook on each event can see and do: one sentence pair per event,
 * printed by review under each hooked event, and the same words in
 * docs/authors.md's table — so the operator and the author read one thing.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { HOOK_SIGHT, sightLines } from "../../broker/hooks/hook-sight.js";
import { EVENT_NAMES } from "../../jail-runtime/wire/events.js";
import { REPO } from "../support/satellites.js";

const AUTHORS = readFileSync(join(REPO, "docs", "authors.md"), "utf8");

test("every event says what its hooks see and can do", () => {
  expect(Object.keys(HOOK_SIGHT).sort()).toEqual([...EVENT_NAMES].sort());
  for (const sight of Object.values(HOOK_SIGHT)) {
    expect(sight.sees.length).toBeGreaterThan(10);
    expect(sight.can.length).toBeGreaterThan(5);
  }
});

test("the session-wide reach is said where it is widest: tool_call, tool_result, cap_call", () => {
  expect(HOOK_SIGHT.tool_call.sees).toContain("of every extension");
  expect(HOOK_SIGHT.tool_result.sees).toContain("of every extension");
  expect(HOOK_SIGHT.cap_call.sees).toContain("other extensions");
});

test("docs/authors.md's table has each event's row, word for word", () => {
  const rows = AUTHORS.split("\n").filter(
    (line) => /^\| `[a-z_]+` \|/.test(line) && AUTHORS.indexOf(line) > AUTHORS.indexOf("## What a hook can see"),
  );
  const table = rows.slice(0, EVENT_NAMES.length);
  expect(table).toEqual(
    EVENT_NAMES.map((event) => `| \`${event}\` | ${HOOK_SIGHT[event].sees} | ${HOOK_SIGHT[event].can} |`),
  );
});

test("review's lines: what it sees, narrowed when a match list names what it is asked about", () => {
  expect(sightLines("cap_call", false)).toEqual([
    `sees: ${HOOK_SIGHT.cap_call.sees}`,
    `can:  ${HOOK_SIGHT.cap_call.can}`,
  ]);
  expect(sightLines("tool_call", true)[0]).toBe(`sees: ${HOOK_SIGHT.tool_call.sees} — only those its match names`);
});
