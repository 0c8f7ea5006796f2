/**
 * `[[search]]` rows and `[capabilities] search` in the manifest: parsed with
 * defaults, refused with the field named, granted by the approval (a new
 * provider or the capability widens an upgrade), and what the boot handshake
 * and the SDK's dispatch make of them.
 */
import { parseManifest } from "../../broker/install/manifest.js";
import { TetherError } from "../../broker/base/errors.js";
import { diffGrants, requestedGrants, widens } from "../../broker/registry/grants.js";
import { servedProblems } from "../../broker/satellite/handshake.js";
import { declaredOf } from "../../broker/install/declared.js";
import { answer } from "../../jail-runtime/ext/answer.js";

const FILE = "ext/finder/manifest.toml";
const HEAD = `name = "finder"
version = "1.0.0"
description = "Finds things"
entry = "index.ts"
`;

function refusal(text: string): string {
  try {
    parseManifest(text, FILE);
  } catch (err) {
    expect(err).toBeInstanceOf(TetherError);
    return (err as TetherError).message;
  }
  throw new Error("Expected the manifest to be refused");
}

const WITH_SEARCH = `${HEAD}
[[search]]
name = "web"
description = "The web."
deadline_ms = 2000

[[search]]
name = "notes"
description = "Notes."

[capabilities]
search = true
`;

test("[[search]] rows and [capabilities] parse, in manifest order, deadline optional", () => {
  const m = parseManifest(WITH_SEARCH, FILE);
  expect(m.search).toEqual([
    { name: "web", description: "The web.", deadline_ms: 2000 },
    { name: "notes", description: "Notes." },
  ]);
  expect(m.capabilities).toEqual({ search: true });
  const bare = parseManifest(HEAD, FILE);
  expect(bare.search).toEqual([]);
  expect(bare.capabilities).toBeUndefined();
});

test("a bad row is refused naming the field; a name twice is refused", () => {
  expect(refusal(`${HEAD}\n[[search]]\nname = "Web"\ndescription = "x"\n`)).toBe(
    `${FILE}: search.0.name: expected a search provider's name (a-z, 0-9, _ and -, at most 64, starting with a letter)`,
  );
  expect(refusal(`${HEAD}\n[[search]]\nname = "web"\n`)).toContain("search.0.description: missing");
  expect(refusal(`${HEAD}\n[[search]]\nname = "w"\ndescription = "x"\nurl = "u"\n`)).toContain("search.0.url");
  expect(
    refusal(`${HEAD}\n[[search]]\nname = "w"\ndescription = "x"\n[[search]]\nname = "w"\ndescription = "y"\n`),
  ).toBe(`${FILE}: search 'w' is declared twice`);
  expect(refusal(`${HEAD}\n[capabilities]\nsearch = "yes"\n`)).toContain("capabilities.search");
  expect(refusal(`${HEAD}\n[capabilities]\nteleport = true\n`)).toContain("capabilities.teleport");
});

test("approving grants the providers and the capability; either one new widens, none leaves grants as before", () => {
  const grants = requestedGrants(parseManifest(WITH_SEARCH, FILE));
  expect(grants.searches).toEqual(["notes", "web"]);
  expect(grants.capabilities).toEqual(["search"]);
  const bare = requestedGrants(parseManifest(HEAD, FILE));
  expect("searches" in bare).toBe(false);
  expect("capabilities" in bare).toBe(false);
  const added = diffGrants(bare, grants);
  expect(added.addedSession).toEqual(["search notes", "search web", "capability search"]);
  expect(widens(added)).toBe(true);
  expect(widens(diffGrants(grants, bare))).toBe(false);
});

test("the handshake compares the hello's searches with the rows, naming the fix", () => {
  const declared = declaredOf(parseManifest(WITH_SEARCH, FILE));
  expect(servedProblems(declared, { tools: [], hooks: [], commands: [], searches: ["web"] })).toEqual([
    "declared in manifest.toml but not exported from index.ts: search notes (export it in `search`, or remove its " +
      "[[search]] row)",
  ]);
  expect(servedProblems(declared, { tools: [], hooks: [], commands: [], searches: ["notes", "web"] })).toEqual([]);
});

test("the SDK answers a search with its provider's results wrapped, and refuses what the kind does not hold", async () => {
  const search = {
    web: (query: string, options: { limit: number; session_id: string }) => [
      { title: `${query} ${options.limit} ${options.session_id}` },
    ],
    bad: () => [{ title: 7 }] as never,
  };
  const args = (name: string) =>
    JSON.stringify({ session_id: "s1", provider: name, query: "q", options: { limit: 3 } });
  expect(await answer({ search }, { kind: "search", name: "web", args: args("web") })).toEqual({
    ok: true,
    value: JSON.stringify({ results: [{ title: "q 3 s1" }] }),
  });
  const bad = await answer({ search }, { kind: "search", name: "bad", args: args("bad") });
  expect(bad).toMatchObject({ ok: false, error: { code: "crashed" } });
  const unknown = await answer({ search }, { kind: "search", name: "nope", args: args("nope") });
  expect(unknown).toMatchObject({
    ok: false,
    error: { code: "unknown_tool", msg: expect.stringContaining("[bad, web]") },
  });
  const empty = await answer(
    { search },
    {
      kind: "search",
      name: "web",
      args: JSON.stringify({ session_id: "s", provider: "web", query: " ", options: {} }),
    },
  );
  expect(empty).toMatchObject({ ok: false, error: { code: "bad_arguments" } });
});
