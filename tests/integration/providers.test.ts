/**
 * Model providers over real jailed satellites, in the library: the catalog
 * (globally enabled, approved extensions in registry order; a taken provider
 * name costs the later extension all of its providers; an extension turned off
 * globally serves none, whatever a session says), completions through the two
 * example providers against fake OpenAI- and Anthropic-compatible servers on
 * loopback (partials in order, the whole text and usage), a session's ranking
 * and exclusions, an API that errors or streams garbage, and the daemon scope:
 * its satellites listed, its ledger and audit rows under `@daemon`, stopped by
 * `Broker.close()`.
 */
import { DAEMON_SCOPE } from "../../broker/providers/daemon.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { Session } from "../../broker/sessions/session.js";
import { openProviderHome, type ProviderHome } from "../support/provider-home.js";

let p: ProviderHome;
const SLOW = 120_000;
const ASK = {
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: "say hello" },
  ],
  max_tokens: 64,
};

beforeAll(async () => {
  p = await openProviderHome("tether-providers-");
}, SLOW);
afterAll(async () => p?.close());

test("the catalog: each served provider with its models, in registry order; the twin and the globally disabled one say why not", () => {
  const view = p.broker.providers();
  expect(view.providers.map((e) => [e.name, e.extension])).toEqual([
    ["local-anthropic", "anthropic-compatible"],
    ["local-openai", "openai-compatible"],
  ]);
  const openai = view.providers[1]!;
  expect(openai.base_url).toBe(p.openai.baseUrl);
  expect(openai.models.find((m) => m.id === "gpt-4o-mini")).toEqual({
    id: "gpt-4o-mini",
    context_window: 128000,
    input_price_per_mtok: 0.15,
    output_price_per_mtok: 0.6,
    capabilities: ["chat", "tools", "vision"],
  });
  expect(view.unavailable).toEqual(
    expect.arrayContaining([
      {
        provider: "off-anthropic",
        extension: "off-anthropic",
        reason: "'off-anthropic' is turned off globally (tether session enable off-anthropic turns it on)",
      },
      {
        provider: "local-openai",
        extension: "zz-twin",
        reason:
          "provider 'local-openai' is also served by 'openai-compatible', which comes first in registry order; 'zz-twin' serves no provider (rename it, or set a lower priority)",
      },
    ]),
  );
  expect(view.daemon).toEqual({
    scope: DAEMON_SCOPE,
    eligible: ["anthropic-compatible", "openai-compatible"],
    running: [],
  });
});

test(
  "a completion through the OpenAI-compatible provider: each delta a partial in order, then the whole text and usage",
  async () => {
    const partials: string[] = [];
    const report = await p.broker.complete(
      { ...ASK, model: "gpt-4o-mini" },
      { onPartial: (text) => partials.push(text) },
    );
    expect(report.outcome).toEqual({
      ok: true,
      text: "Hello, world!",
      usage: { input_tokens: 12, output_tokens: 4 },
      stopReason: "stop",
      model: "gpt-4o-mini",
    });
    expect(partials).toEqual(["Hello", ", ", "world", "!"]);
    expect([report.provider, report.extension]).toEqual(["local-openai", "openai-compatible"]);
    const sent = p.openai.requests.at(-1)!;
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.body).toMatchObject({ model: "gpt-4o-mini", stream: true, max_tokens: 64, messages: ASK.messages });
    // The daemon satellite runs, and the ledger and audit rows are the daemon scope's.
    expect(p.broker.providers().daemon.running).toEqual(["openai-compatible"]);
    p.broker.ledger.flush();
    const row = p.broker.store.sqlite
      .prepare("select session_id, extension, kind, name, outcome from invocations where id = ?")
      .get(report.invocationId);
    expect(row).toEqual({
      session_id: DAEMON_SCOPE,
      extension: "openai-compatible",
      kind: "complete",
      name: "local-openai",
      outcome: "ok",
    });
    const audit = p.broker.store.sqlite
      .prepare("select session_id, capability, decision, rule from cap_audit where invocation_id = ? order by id")
      .all(report.invocationId) as Array<Record<string, string>>;
    expect(audit[0]).toEqual({
      session_id: DAEMON_SCOPE,
      capability: "net.fetch",
      decision: "allowed",
      rule: `POST ${p.openai.baseUrl}/chat/completions`,
    });
    expect(audit.filter((a) => a.capability === "report.emit")).toHaveLength(4);
  },
  SLOW,
);

test(
  "a completion through the Anthropic-compatible provider, named: the system prompt apart, partials in order, usage from message_delta",
  async () => {
    const partials: string[] = [];
    const report = await p.broker.complete(
      { ...ASK, provider: "local-anthropic", model: "claude-sonnet-4" },
      { onPartial: (text) => partials.push(text) },
    );
    expect(report.outcome).toEqual({
      ok: true,
      text: "Hello, world!",
      usage: { input_tokens: 12, output_tokens: 4 },
      stopReason: "end_turn",
      model: "claude-sonnet-4",
    });
    expect(partials).toEqual(["Hello", ", ", "world", "!"]);
    expect(p.anthropic.requests.at(-1)!.body).toMatchObject({
      model: "claude-sonnet-4",
      system: "be brief",
      messages: [{ role: "user", content: "say hello" }],
      stream: true,
    });
  },
  SLOW,
);

test("a provider not enabled globally is not eligible, even where a session turns its extension on", async () => {
  new Preferences(p.broker.store).setSession("keen", "off-anthropic", true);
  const report = await p.broker.complete(
    { ...ASK, provider: "off-anthropic", model: "claude-sonnet-4" },
    { session: "keen" },
  );
  expect(report.outcome).toEqual({
    ok: false,
    error: {
      code: "inactive",
      msg: "Provider 'off-anthropic' of 'off-anthropic' is not served: 'off-anthropic' is turned off globally (tether session enable off-anthropic turns it on)",
    },
  });
  expect(p.broker.providers("keen").providers.map((e) => e.name)).toEqual(["local-anthropic", "local-openai"]);
  const unknown = await p.broker.complete({ ...ASK, provider: "nobody", model: "x" });
  expect(unknown.outcome).toEqual({
    ok: false,
    error: {
      code: "unknown_tool",
      msg: "Unknown provider 'nobody'; the broker serves [local-anthropic, local-openai]",
    },
  });
});

test(
  "a session's ranking picks among providers of one model, and its exclusions are honoured; it enables nothing",
  async () => {
    const session = await Session.open(p.broker, { id: "ranked", workspace: p.tmp });
    try {
      expect((await session.complete({ ...ASK, model: "shared" })).provider).toBe("local-anthropic");
      session.preferProviders({ rank: ["local-openai", "off-anthropic"] });
      const view = session.providers();
      expect(view.providers.map((e) => e.name)).toEqual(["local-openai", "local-anthropic"]);
      expect(view.notes).toEqual([
        "provider 'off-anthropic' is named in this session's preference but is not served (not installed, not approved, or its extension is turned off globally)",
      ]);
      expect((await session.complete({ ...ASK, model: "shared" })).provider).toBe("local-openai");
      session.preferProviders({ exclude: ["local-openai"] });
      expect((await session.complete({ ...ASK, model: "shared" })).provider).toBe("local-anthropic");
      const named = await session.complete({ ...ASK, provider: "local-openai", model: "shared" });
      expect(named.outcome).toEqual({
        ok: false,
        error: {
          code: "inactive",
          msg: "Provider 'local-openai' is excluded by session 'ranked's preference; remove it from the exclusions to use it",
        },
      });
      const gone = await session.complete({ ...ASK, model: "gpt-4o-mini" });
      expect(gone.outcome).toEqual({
        ok: false,
        error: {
          code: "unknown_tool",
          msg: "No provider offers model 'gpt-4o-mini'; the broker serves [local-anthropic]; session 'ranked' excludes local-openai",
        },
      });
      expect(() => session.preferProviders({ rank: ["a"], exclude: ["a"] })).toThrow(
        "A provider cannot be both ranked and excluded: a; drop it from one list",
      );
      session.preferProviders(null);
      expect(session.providers().preference).toBeNull();
    } finally {
      await session.close();
    }
  },
  SLOW,
);

test(
  "an API that answers 500, or streams an event that is not JSON, is a clear failure; a bad request throws before anything runs",
  async () => {
    const boom = await p.broker.complete({ ...ASK, provider: "local-openai", model: "boom" });
    expect(boom.outcome).toEqual({
      ok: false,
      error: {
        code: "refused",
        msg: `Provider 'local-openai' of 'openai-compatible' failed: complete 'local-openai': the API answered 500: {"error":{"message":"the model is on fire"}}`,
      },
    });
    const garbled = await p.broker.complete({ ...ASK, provider: "local-anthropic", model: "garbled" });
    expect(garbled.outcome).toEqual({
      ok: false,
      error: {
        code: "refused",
        msg: "Provider 'local-anthropic' of 'anthropic-compatible' failed: complete 'local-anthropic': the API's stream is malformed: the content_block_delta event is not JSON ({not json)",
      },
    });
    await expect(p.broker.complete({ model: "x", messages: [], max_tokens: 1 })).rejects.toThrow(
      "Not a completion request: Invalid length: Expected >=1 but received 0 at .messages",
    );
  },
  SLOW,
);

test(
  "Broker.close() stops the daemon satellites",
  async () => {
    const daemon = p.broker.scope(DAEMON_SCOPE);
    expect([...daemon.live.keys()].sort()).toEqual(["anthropic-compatible", "openai-compatible"]);
    const pools = [...daemon.live.values()].map((live) => live.slot);
    await p.broker.close();
    expect(daemon.live.size).toBe(0);
    expect(pools.map((pool) => pool.state)).toEqual(["dead", "dead"]);
  },
  SLOW,
);
