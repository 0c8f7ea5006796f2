/**
 * A session's search preference and the merge: the preference checked (names,
 * bounds, a name in both lists refused, duplicates dropped), and the merge of
 * providers' answers round-robin in rank order, each URL once, cut at the limit.
 */
import { checkSearchPreference } from "../../broker/sessions/search-providers.js";
import { checkSearchInput, mergeResults } from "../../broker/sessions/search-call.js";

test("a preference is two lists of provider names; duplicates dropped, a name in both refused", () => {
  expect(checkSearchPreference({ rank: ["web", "notes", "web"] })).toEqual({ rank: ["web", "notes"], exclude: [] });
  expect(checkSearchPreference({})).toEqual({ rank: [], exclude: [] });
  expect(() => checkSearchPreference({ rank: ["web"], exclude: ["web"] })).toThrow(
    "A search provider cannot be both ranked and excluded: web; drop it from one list",
  );
  expect(() => checkSearchPreference({ rank: ["Web"] })).toThrow("Not a search preference: expected a search provider");
  expect(() => checkSearchPreference({ rank: Array.from({ length: 257 }, (_, i) => `p${i}`) })).toThrow(
    "Not a search preference",
  );
  expect(() => checkSearchPreference({ prefer: ["web"] })).toThrow("Not a search preference");
});

const provider = (name: string) => ({ name, extension: `${name}-ext`, description: "" });

test("answers merge round-robin in rank order; a URL an earlier result has is dropped; the limit cuts", () => {
  const answered = [
    {
      provider: provider("first"),
      results: [{ title: "f1", url: "u1" }, { title: "f2", url: "shared" }, { title: "f3" }],
    },
    { provider: provider("second"), results: [{ title: "s1", url: "shared" }, { title: "s2" }] },
    { provider: provider("empty"), results: [] },
  ];
  expect(mergeResults(answered, 10).map((r) => `${r.provider}:${r.title}`)).toEqual([
    "first:f1",
    "second:s1",
    "second:s2",
    "first:f3",
  ]);
  expect(mergeResults(answered, 3).map((r) => r.title)).toEqual(["f1", "s1", "s2"]);
  expect(mergeResults(answered, 1)).toEqual([{ title: "f1", url: "u1", provider: "first", extension: "first-ext" }]);
  expect(mergeResults([], 5)).toEqual([]);
});

test("a query and options are checked: not empty, bounded, limit 1..100 defaulting to 10", () => {
  expect(checkSearchInput("tether", undefined)).toEqual({ query: "tether", options: { limit: 10 } });
  expect(checkSearchInput("tether", { limit: 100 }).options.limit).toBe(100);
  expect(() => checkSearchInput("", {})).toThrow("Not a search query");
  expect(() => checkSearchInput("x".repeat(4097), {})).toThrow("at most 4096 characters");
  expect(() => checkSearchInput("q", { limit: 0 })).toThrow("expected a limit of 1 to 100");
  expect(() => checkSearchInput("q", { limit: 2.5 })).toThrow("Not search options");
  expect(() => checkSearchInput("q", { depth: 2 })).toThrow("Not search options");
});
