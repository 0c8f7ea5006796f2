/**
 * The session-facing kinds in grants: what a manifest requests, what an
 * approval made before they existed grants (nothing), how an upgrade's diff
 * names them, which of them widen (everything added, for review; for the dev
 * loop only what sees more of a session), and the review's lines.
 */
import { devWidens } from "../../broker/cli/dev.js";
import { parseManifest } from "../../broker/install/manifest.js";
import { diffGrants, parseGrants, requestedGrants, sessionItems, widens } from "../../broker/registry/grants.js";

const HEAD = `name = "pad"
version = "1.0.0"
description = "A pad"
entry = "index.ts"
`;
const FULL = `${HEAD}
[[context]]
name = "notes"
description = "The session's notes"

[[route]]
name = "status"
description = "What is on the pad"

[[compaction]]
name = "fold"
description = "Folds old results"

[managed]
prepare_deadline_ms = 2000

[observe]
events = ["usage", "turn"]
`;

test("a manifest requests each kind by name, sorted; managed and observe as it declares them", () => {
  const g = requestedGrants(parseManifest(FULL, "manifest.toml"));
  expect(g).toMatchObject({
    contexts: ["notes"],
    routes: ["status"],
    compactions: ["fold"],
    managed: true,
    observe: ["turn", "usage"],
  });
  expect(sessionItems(g)).toEqual([
    "context notes",
    "route status",
    "compaction fold",
    "managed",
    "observe turn",
    "observe usage",
  ]);
});

test("an approval recorded before these kinds existed parses as granting none of them", () => {
  const old = parseGrants(JSON.stringify({ net: [], tools: ["t"], hooks: [], commands: [], limits: {} }));
  expect(sessionItems(old)).toEqual([]);
  expect(old.managed).toBe(false);
});

test("an upgrade adding them lists each and widens; the dev loop asks only for what sees more", () => {
  const before = requestedGrants(parseManifest(HEAD, "manifest.toml"));
  const after = requestedGrants(parseManifest(FULL, "manifest.toml"));
  const diff = diffGrants(before, after);
  expect(diff.addedSession).toEqual(sessionItems(after));
  expect(diff.removedSession).toEqual([]);
  expect(widens(diff)).toBe(true);
  expect(devWidens(diff)).toBe(true);
  // A context loader and a route are offers: review shows them, the dev loop does not stop for them.
  const offers = requestedGrants(
    parseManifest(
      `${HEAD}\n[[context]]\nname = "n"\ndescription = "d"\n\n[[route]]\nname = "r"\ndescription = "d"\n`,
      "manifest.toml",
    ),
  );
  expect(devWidens(diffGrants(before, offers))).toBe(false);
  expect(widens(diffGrants(before, offers))).toBe(true);
  expect(diffGrants(after, before).removedSession).toEqual(sessionItems(after));
});

test("the manifest refuses a name declared twice, an unknown observed event, and an empty [observe]", () => {
  expect(() =>
    parseManifest(
      `${HEAD}\n[[route]]\nname = "r"\ndescription = "d"\n\n[[route]]\nname = "r"\ndescription = "e"\n`,
      "m.toml",
    ),
  ).toThrow("m.toml: route 'r' is declared twice");
  expect(() => parseManifest(`${HEAD}\n[observe]\nevents = ["tool_call"]\n`, "m.toml")).toThrow(
    /observe\.events\.0: Invalid type: Expected \("turn" \| "usage" \| "compaction" \| "session"\)/,
  );
  expect(() => parseManifest(`${HEAD}\n[observe]\nevents = []\n`, "m.toml")).toThrow(
    "expected at least one of: turn, usage, compaction, session",
  );
});

test("a provider naming a secret no [[secret]] row declares is refused, saying what to add", () => {
  const provider = `${HEAD}\n[[provider]]\nname = "p"\ndescription = "d"\nsecret = "key"\nmodels = [{ id = "m", context_window = 1000 }]\n`;
  expect(() => parseManifest(provider, "m.toml")).toThrow(
    "m.toml: provider 'p' names the secret 'key', which no [[secret]] row declares",
  );
});
