/**
 * The manifest's `[model]` table (broker/install/model-table.ts): what it
 * takes and refuses, the grant it asks for, how an upgrade that declares it,
 * raises a budget or adds a provider widens the approval, and what review says.
 */
import { parseManifest } from "../../broker/install/manifest.js";
import { modelReviewLines } from "../../broker/install/model-table.js";
import { diffGrants, requestedGrants, widens } from "../../broker/registry/grants.js";

const HEAD = 'name = "asker"\nversion = "1.0.0"\ndescription = "Asks models."\nentry = "index.ts"\n';
const parse = (body: string) => parseManifest(`${HEAD}${body}`, "asker/manifest.toml");

test("a [model] table: an optional allow-list and two budgets, granted as declared", () => {
  const m = parse(
    '[model]\nproviders = ["local-openai", "local-anthropic"]\nmax_tokens_per_call = 512\nmax_tokens_per_day = 50000\n',
  );
  expect(m.model).toEqual({
    providers: ["local-openai", "local-anthropic"],
    max_tokens_per_call: 512,
    max_tokens_per_day: 50000,
  });
  expect(requestedGrants(m).model).toEqual({
    providers: ["local-anthropic", "local-openai"],
    max_tokens_per_call: 512,
    max_tokens_per_day: 50000,
  });
  // None declared: the grants have no `model` at all (an older approval's bytes stay as they were).
  expect("model" in requestedGrants(parse(""))).toBe(false);
});

test.each([
  ["[model]\nmax_tokens_per_call = 10\n", "model.max_tokens_per_day: missing"],
  ["[model]\nmax_tokens_per_call = 0\nmax_tokens_per_day = 10\n", "model.max_tokens_per_call: Invalid value"],
  ["[model]\nmax_tokens_per_call = 1.5\nmax_tokens_per_day = 10\n", "model.max_tokens_per_call: Invalid integer"],
  ["[model]\nmax_tokens_per_call = 10\nmax_tokens_per_day = 10\nbudget = 3\n", "model.budget: Invalid key"],
  [
    '[model]\nproviders = ["Bad Name"]\nmax_tokens_per_call = 1\nmax_tokens_per_day = 1\n',
    "expected a provider's name",
  ],
  ["[model]\nproviders = []\nmax_tokens_per_call = 1\nmax_tokens_per_day = 1\n", "model.providers: Invalid length"],
  [
    "[model]\nmax_tokens_per_call = 100\nmax_tokens_per_day = 10\n",
    "model.max_tokens_per_call (100) is more than model.max_tokens_per_day (10)",
  ],
  [
    '[model]\nproviders = ["a", "a"]\nmax_tokens_per_call = 1\nmax_tokens_per_day = 1\n',
    "model.providers names a twice",
  ],
])("refused: %j", (body, says) => {
  expect(() => parse(body)).toThrow(says);
});

test("an upgrade that declares [model], raises a budget or adds a provider widens; lowering does not", () => {
  const none = requestedGrants(parse(""));
  const some = requestedGrants(
    parse('[model]\nproviders = ["a"]\nmax_tokens_per_call = 10\nmax_tokens_per_day = 100\n'),
  );
  const declared = diffGrants(none, some);
  expect(declared.addedSession).toEqual(["model", "model provider a"]);
  expect(declared.raisedLimits).toEqual([
    ["model.max_tokens_per_call", 0, 10],
    ["model.max_tokens_per_day", 0, 100],
  ]);
  expect(widens(declared)).toBe(true);
  const more = requestedGrants(
    parse('[model]\nproviders = ["a", "b"]\nmax_tokens_per_call = 10\nmax_tokens_per_day = 200\n'),
  );
  const raised = diffGrants(some, more);
  expect(raised.addedSession).toEqual(["model provider b"]);
  expect(raised.raisedLimits).toEqual([["model.max_tokens_per_day", 100, 200]]);
  // Any provider (no list) is wider than a list.
  const any = requestedGrants(parse("[model]\nmax_tokens_per_call = 10\nmax_tokens_per_day = 100\n"));
  expect(diffGrants(some, any).addedSession).toEqual(["model provider *"]);
  const lowered = diffGrants(more, some);
  expect(widens(lowered)).toBe(false);
  expect(lowered.loweredLimits).toEqual([["model.max_tokens_per_day", 200, 100]]);
});

test("review says which providers and how many tokens a call and a day", () => {
  const m = parse('[model]\nproviders = ["local-openai"]\nmax_tokens_per_call = 512\nmax_tokens_per_day = 50000\n');
  expect(modelReviewLines(m.model, false)).toEqual([
    "It calls models itself (capability model.complete; sends what it chooses of what it sees to the provider): " +
      "only local-openai; at most 512 tokens a call, 50000 a day",
  ]);
  const any = parse("[model]\nmax_tokens_per_call = 1\nmax_tokens_per_day = 2\n");
  expect(modelReviewLines(any.model, true)[0]).toContain("any provider the broker serves; at most 1 tokens a call");
  expect(modelReviewLines(any.model, true)[0]).toMatch(/\[NEW\]$/);
});
