/**
 * Search providers over real jailed satellites: `[[search]]` rows of the
 * session's active extensions, ranked and excluded by the session's saved
 * preference (which enables nothing); `session.search` asks them all and
 * merges round-robin in rank order, a failing provider a note; the
 * `search.query` capability from another extension (declared and audited, or
 * refused and audited when not declared); a host route's payload carrying the
 * providers in preference order.
 * Extensions: written to a temporary folder by this suite.
 */
import { rmSync } from "node:fs";
import type { Broker } from "../../broker/broker.js";
import type { Session } from "../../broker/sessions/session.js";
import { contentText, openHookSession, type HookSession } from "../support/hook-session.js";
import { writeExtensions } from "./support/write-extensions.js";

const provider = (name: string) => `
[[search]]
name = "${name}"
description = "Searches ${name}."
`;

const EXTENSIONS = {
  alpha: {
    manifest: provider("alpha-docs"),
    code: `import type { SearchProvider } from "@tether/ext";
export const tools = {};
const docs: SearchProvider = (query, options) => [
  { title: \`alpha 1 \${query} \${options.limit} \${options.session_id}\`, url: "https://a.example/1", score: 0.9 },
  { title: "alpha 2", url: "https://shared.example/x" },
  { title: "alpha 3" },
];
export const search = { "alpha-docs": docs };
`,
  },
  beta: {
    manifest: provider("beta-web"),
    code: `import type { SearchProvider } from "@tether/ext";
export const tools = {};
const web: SearchProvider = (query) => [
  { title: \`beta 1 \${query}\`, url: "https://shared.example/x", snippet: "the same URL as alpha 2" },
  { title: "beta 2", url: "https://b.example/2" },
];
export const search = { "beta-web": web };
`,
  },
  broken: {
    manifest: provider("broken-index"),
    code: `import type { SearchProvider } from "@tether/ext";
export const tools = {};
const index: SearchProvider = () => {
  throw new Error("the index is gone");
};
export const search = { "broken-index": index };
`,
  },
  sleepy: {
    manifest: provider("sleepy-archive"),
    code: `import type { SearchProvider } from "@tether/ext";
export const tools = {};
export const search = { "sleepy-archive": () => [{ title: "never" }] };
`,
  },
  asker: {
    manifest: `
[capabilities]
search = true

[[tool]]
name = "ask"
description = "Searches and answers the titles."

[[route]]
name = "providers"
description = "Answers the search providers it was handed."
`,
    code: `import { search } from "@tether/cap";
import { outcome, text, type Route } from "@tether/ext";
export const tools = {
  ask: async (args: unknown) => {
    const { results, notes } = await search.query("tether", { limit: 4 });
    return outcome([text(JSON.stringify({ titles: results.map((r) => r.provider + ":" + r.title), notes }))]);
  },
};
const providers: Route = (_request, session) => JSON.stringify(session.search);
export const routes = { providers };
`,
  },
  undeclared: {
    manifest: `
[[tool]]
name = "sneak"
description = "Searches without asking for it."
`,
    code: `import { search } from "@tether/cap";
import { outcome, text } from "@tether/ext";
export const tools = {
  sneak: async () => {
    try {
      await search.query("anything");
      return outcome([text("searched")]);
    } catch (err) {
      return outcome([text("refused: " + (err as Error).message)]);
    }
  },
};
`,
  },
} as const;

let fixtures: string;
let opened: HookSession;
let broker: Broker;
let session: Session;

/** The session's audit rows of `search.query`: [extension, decision, rule]. */
function audit(): [string, string, string][] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare(
      "select extension, decision, rule from cap_audit where session_id = ? and capability = 'search.query' order by id",
    )
    .all(session.id) as { extension: string; decision: string; rule: string }[];
  return rows.map((r) => [r.extension, r.decision, r.rule]);
}

beforeAll(async () => {
  fixtures = writeExtensions("tether-search-ext-", EXTENSIONS);
  opened = await openHookSession(
    "tether-search-",
    fixtures,
    ["alpha", "beta", "broken", "sleepy", "asker", "undeclared"],
    "search-1",
  );
  ({ broker, session } = opened);
  session.prefer("sleepy", false);
  await session.reload();
});

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

afterEach(() => session.preferSearch(null));

test("with no preference, the active extensions' providers are listed in registry order", () => {
  const listed = session.searchProviders();
  expect(listed.providers.map((p) => [p.name, p.extension])).toEqual([
    ["alpha-docs", "alpha"],
    ["beta-web", "beta"],
    ["broken-index", "broken"],
  ]);
  expect(listed.preference).toBeNull();
});

test("a preference ranks and excludes; it is saved, and ranking an inactive extension's provider enables nothing", async () => {
  session.preferSearch({ rank: ["sleepy-archive", "beta-web"], exclude: ["broken-index"] });
  const listed = session.searchProviders();
  expect(listed.providers.map((p) => p.name)).toEqual(["beta-web", "alpha-docs"]);
  expect(listed.excluded).toEqual(["broken-index"]);
  expect(listed.notes).toEqual([
    expect.stringContaining("search provider 'sleepy-archive' is named in this session's preference but no extension"),
  ]);
  // The ranked provider's extension stays inactive, also after a reload.
  await session.reload();
  expect(session.status().find((s) => s.name === "sleepy")?.state).toBe("disabled");
  expect(session.searchProviders().providers.map((p) => p.name)).toEqual(["beta-web", "alpha-docs"]);
  const report = await session.search("q");
  expect(report.providers.map((p) => p.name)).toEqual(["beta-web", "alpha-docs"]);
  expect(report.results.some((r) => r.extension === "sleepy")).toBe(false);
});

test("a name both ranked and excluded is refused, naming it", () => {
  expect(() => session.preferSearch({ rank: ["beta-web"], exclude: ["beta-web"] })).toThrow(
    "A search provider cannot be both ranked and excluded: beta-web; drop it from one list",
  );
});

test("session.search merges round-robin in rank order, each URL once; a failing provider is a note", async () => {
  session.preferSearch({ rank: ["beta-web"] });
  const report = await session.search("tether", { limit: 5 });
  expect(report.results.map((r) => `${r.provider}:${r.title}`)).toEqual([
    "beta-web:beta 1 tether",
    "alpha-docs:alpha 1 tether 5 search-1",
    "beta-web:beta 2",
    // alpha 2 shares beta 1's URL: the higher-ranked provider keeps it.
    "alpha-docs:alpha 3",
  ]);
  expect(report.results[1]).toMatchObject({ url: "https://a.example/1", score: 0.9, extension: "alpha" });
  expect(report.providers.map((p) => [p.name, p.ok])).toEqual([
    ["beta-web", true],
    ["alpha-docs", true],
    ["broken-index", false],
  ]);
  expect(report.notes).toEqual([
    "search provider 'broken-index' of 'broken' failed: crashed: Error: the index is gone",
  ]);
});

test("limit cuts the merged results; a query that does not fit throws bad_arguments", async () => {
  const report = await session.search("tether", { limit: 2 });
  expect(report.results.map((r) => r.title)).toEqual(["alpha 1 tether 2 search-1", "beta 1 tether"]);
  await expect(session.search("   ")).rejects.toThrow("Not a search query");
  await expect(session.search("q", { limit: 101 })).rejects.toThrow("expected a limit of 1 to 100");
});

test("another extension's search.query is judged, audited, and answers the ranked providers' results", async () => {
  session.preferSearch({ rank: ["beta-web"], exclude: ["broken-index"] });
  const report = await session.callTool("ask", "{}");
  expect(report.outcome.ok).toBe(true);
  expect(JSON.parse(contentText(report.outcome))).toEqual({
    titles: ["beta-web:beta 1 tether", "alpha-docs:alpha 1 tether 4 search-1", "beta-web:beta 2", "alpha-docs:alpha 3"],
    notes: [],
  });
  expect(audit()).toContainEqual(["asker", "allowed", "capabilities.search"]);
});

test("search.query from an extension that does not declare it is refused and audited", async () => {
  const report = await session.callTool("sneak", "{}");
  expect(contentText(report.outcome)).toContain("does not ask for search; add [capabilities] search = true");
  expect(audit()).toContainEqual(["undeclared", "denied", "capabilities.search"]);
});

test("a host route's payload carries the session's providers in preference order", async () => {
  session.preferSearch({ rank: ["broken-index"], exclude: ["alpha-docs"] });
  const report = await session.route("asker", "providers", "");
  expect(report.outcome.ok).toBe(true);
  const handed = JSON.parse((report.outcome as { response: string }).response);
  expect(handed).toEqual([
    { name: "broken-index", extension: "broken", description: "Searches broken-index." },
    { name: "beta-web", extension: "beta", description: "Searches beta-web." },
  ]);
});
