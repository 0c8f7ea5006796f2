/**
 * Model providers without satellites: the `[[provider]]` rows and their
 * refusals, grants (a new provider widens, for review and the dev loop), the
 * served = declared check, the SDK's SSE reading, partial merging and its
 * answer for kind `complete`, and a session's ranking.
 */
import { devWidens } from "../../broker/cli/dev.js";
import { TetherError } from "../../broker/base/errors.js";
import { parseManifest } from "../../broker/install/manifest.js";
import type { ProviderCatalog } from "../../broker/providers/catalog.js";
import { checkProviderPreference, rankProviders } from "../../broker/providers/ranking.js";
import { diffGrants, requestedGrants, sessionItems, widens } from "../../broker/registry/grants.js";
import { servedProblems } from "../../broker/satellite/handshake.js";
import { answer } from "../../jail-runtime/ext/answer.js";
import { testCtx } from "../../jail-runtime/ext/ctx.js";
import { deltaPartials, ProviderError, sseEvents, type Provider } from "../../jail-runtime/ext/provider.js";

const HEAD = `name = "llm"
version = "1.0.0"
description = "A provider"
entry = "index.ts"
`;
const ROW = `
[[provider]]
name = "local"
description = "A local server"
base_url = "http://127.0.0.1:8080/v1"
models = [{ id = "m-1", context_window = 4096 }]
`;

function refusal(text: string): string {
  try {
    parseManifest(text, "manifest.toml");
  } catch (err) {
    expect(err).toBeInstanceOf(TetherError);
    return (err as TetherError).message;
  }
  throw new Error("Expected the manifest to be refused");
}

test("a [[provider]] row parses with its model's defaults filled", () => {
  const m = parseManifest(HEAD + ROW, "manifest.toml");
  expect(m.provider).toEqual([
    {
      name: "local",
      description: "A local server",
      base_url: "http://127.0.0.1:8080/v1",
      models: [
        { id: "m-1", context_window: 4096, input_price_per_mtok: 0, output_price_per_mtok: 0, capabilities: [] },
      ],
    },
  ]);
});

test("a provider twice, a model twice, no model, a base_url that is not http are refused, naming the row", () => {
  expect(refusal(HEAD + ROW + ROW)).toBe("manifest.toml: provider 'local' is declared twice");
  expect(
    refusal(
      HEAD +
        ROW.replace(
          'models = [{ id = "m-1", context_window = 4096 }]',
          'models = [{ id = "m-1", context_window = 1 }, { id = "m-1", context_window = 2 }]',
        ),
    ),
  ).toBe("manifest.toml: provider 'local' lists model 'm-1' twice");
  expect(refusal(HEAD + ROW.replace(/models = .*/, "models = []"))).toBe(
    "manifest.toml: provider.0.models: expected at least one model",
  );
  expect(refusal(HEAD + ROW.replace("http://127.0.0.1:8080/v1", "file:///etc"))).toBe(
    "manifest.toml: provider.0.base_url: expected an http or https URL",
  );
});

test("grants: providers requested by name; one added on upgrade widens, for review and for the dev loop", () => {
  const before = requestedGrants(parseManifest(HEAD, "manifest.toml"));
  const after = requestedGrants(parseManifest(HEAD + ROW, "manifest.toml"));
  expect(after.providers).toEqual(["local"]);
  expect(sessionItems(after)).toEqual(["provider local"]);
  const diff = diffGrants(before, after);
  expect(diff.addedSession).toEqual(["provider local"]);
  expect(widens(diff)).toBe(true);
  expect(devWidens(diff)).toBe(true);
  // A model added to a provider is catalog data: no grant changes.
  const more = requestedGrants(
    parseManifest(
      HEAD +
        ROW.replace(
          '{ id = "m-1", context_window = 4096 }',
          '{ id = "m-1", context_window = 4096 }, { id = "m-2", context_window = 8 }',
        ),
      "manifest.toml",
    ),
  );
  expect(widens(diffGrants(after, more))).toBe(false);
});

test("served = declared covers providers, each difference saying what to change", () => {
  const declared = { tools: [], hooks: [], providers: ["local"], entry: "index.ts" };
  expect(servedProblems(declared, { tools: [], hooks: [], commands: [], providers: [] })).toEqual([
    "declared in manifest.toml but not exported from index.ts: provider local (export it in `providers`, or remove its [[provider]] row)",
  ]);
  expect(
    servedProblems({ ...declared, providers: [] }, { tools: [], hooks: [], commands: [], providers: ["x"] }),
  ).toEqual([
    'exported from index.ts but not declared in manifest.toml: provider x (add a [[provider]] row with name = "x", or remove it from `providers`)',
  ]);
});

test("sseEvents reads events as EventSource does: names, multi-line data, comments, CRLF, an unfinished last event", () => {
  expect(sseEvents(': hi\r\nevent: a\r\ndata: 1\r\ndata:2\r\n\r\ndata: {"x":1}\n\nevent: b\ndata: tail')).toEqual([
    { event: "a", data: "1\n2" },
    { event: null, data: '{"x":1}' },
    { event: "b", data: "tail" },
  ]);
});

test("deltaPartials: one per delta while few; past the bound, neighbours merged, in order, the text kept", () => {
  expect(deltaPartials(["a", "", "b"])).toEqual(["a", "b"]);
  const many = Array.from({ length: 100 }, (_, i) => `${i},`);
  const merged = deltaPartials(many);
  expect(merged.length).toBeLessThanOrEqual(40);
  expect(merged.join("")).toBe(many.join(""));
  expect(deltaPartials(["x".repeat(5000)])).toEqual(["x".repeat(4000)]);
});

const payload = {
  provider: "local",
  model: "m-1",
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 8,
  base_url: "",
  secret: null,
  session_id: null,
};
const ask = (providers: Record<string, Provider>, name = "local") =>
  answer({ providers }, { kind: "complete", name, args: JSON.stringify(payload) }, testCtx());

test("the SDK answers kind complete: the reply checked, a ProviderError refused with no stack, an unknown provider named", async () => {
  expect(await ask({ local: () => ({ text: "ok", usage: { input_tokens: 1, output_tokens: 1 } }) })).toEqual({
    ok: true,
    value: '{"text":"ok","usage":{"input_tokens":1,"output_tokens":1}}',
  });
  expect(
    await ask({
      local: () => {
        throw new ProviderError("the API answered 500: down");
      },
    }),
  ).toEqual({ ok: false, error: { code: "refused", msg: "complete 'local': the API answered 500: down" } });
  expect(await ask({ local: () => ({ text: "ok" }) as never })).toMatchObject({
    ok: false,
    error: { code: "crashed", msg: expect.stringContaining("complete 'local' answered what it may not") },
  });
  expect(await ask({}, "nope")).toEqual({
    ok: false,
    error: { code: "unknown_tool", msg: "No provider 'nope'; this extension serves []" },
  });
});

const entry = (name: string, extension: string) => ({
  name,
  extension,
  description: "",
  base_url: "",
  secret: null,
  models: [{ id: "m", context_window: 1, input_price_per_mtok: 0, output_price_per_mtok: 0, capabilities: [] }],
});
const CATALOG: ProviderCatalog = { providers: [entry("a", "x"), entry("b", "y"), entry("c", "z")], unavailable: [] };

test("a session's ranking orders what is served and excludes; names not served change nothing and are noted", () => {
  expect(rankProviders(CATALOG, null).providers.map((p) => p.name)).toEqual(["a", "b", "c"]);
  const ranked = rankProviders(CATALOG, { rank: ["c", "ghost"], exclude: ["a"] });
  expect(ranked.providers.map((p) => p.name)).toEqual(["c", "b"]);
  expect(ranked.excluded).toEqual(["a"]);
  expect(ranked.notes).toEqual([
    "provider 'ghost' is named in this session's preference but is not served (not installed, not approved, or its extension is turned off globally)",
  ]);
  expect(() => checkProviderPreference({ rank: ["Bad"] })).toThrow(
    "Not a provider preference: expected a provider's name (a-z, 0-9, _ and -, at most 64, starting with a letter) at .rank.0",
  );
  expect(checkProviderPreference({ rank: ["a", "a"] })).toEqual({ rank: ["a"], exclude: [] });
});
