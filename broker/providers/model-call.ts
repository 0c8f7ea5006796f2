/**
 * The completion bridge as `model.complete` asks it (the port in
 * broker/base/model-port.ts): a provider is chosen among those served — the
 * one named, else the first that offers the model in the session's ranking
 * (`Session.preferProviders`), or in registry order for the daemon scope —
 * leaving out the asking extension's own providers (its satellite is busy with
 * this very call) and any the approval's `[model] providers` does not list;
 * then the bridge (completion.ts) asks it, in the daemon scope, as it asks a
 * harness's completion.
 */
import { describeChain, waits } from "../base/waits.js";
import type { ModelAsk, ModelChoice, ModelOutcome, ModelPort } from "../base/model-port.js";
import { TetherError, WireCode } from "../base/errors.js";
import type { KernelHost } from "../kernel/host.js";
import { providerPreferencesOf } from "../store/rank-preferences-repository.js";
import { providerCatalog, type ProviderEntry } from "./catalog.js";
import { complete } from "./completion.js";
import { DAEMON_SCOPE } from "./daemon.js";
import { rankProviders } from "./ranking.js";

const listed = (entries: readonly ProviderEntry[]) => `[${entries.map((e) => e.name).join(", ")}]`;

/** The session whose preference ranks the providers; none for the daemon scope. */
const sessionOf = (ask: ModelAsk): string | undefined => (ask.sessionId === DAEMON_SCOPE ? undefined : ask.sessionId);

function choose(host: KernelHost, ask: ModelAsk): ModelChoice {
  const session = sessionOf(ask);
  const ranked = rankProviders(
    providerCatalog(host),
    session === undefined ? null : providerPreferencesOf(host.store).get(session),
  );
  // Never the asker's own providers, nor one whose daemon satellite waits on this call further up.
  const waiting = (p: ProviderEntry) => waits(ask.chain, DAEMON_SCOPE, p.extension);
  const usable = ranked.providers.filter(
    (p) => p.extension !== ask.extension && !waiting(p) && (ask.allow === null || ask.allow.includes(p.name)),
  );
  const { model, provider } = ask.request;
  const no = (msg: string): ModelChoice => ({ ok: false, code: WireCode.denied, rule: "model.provider", msg });
  if (provider !== undefined) {
    const entry = usable.find((p) => p.name === provider);
    if (entry === undefined) {
      const why = ranked.excluded.includes(provider)
        ? `session '${session}'s preference excludes it`
        : ranked.providers.some((p) => p.name === provider && p.extension === ask.extension)
          ? `it is '${ask.extension}'s own`
          : ranked.providers.some((p) => p.name === provider && waiting(p))
            ? `its satellite waits on this very call (${describeChain(ask.chain)})`
            : "the broker does not serve it";
      return no(`provider '${provider}' cannot be asked: ${why}; it may ask ${listed(usable)}`);
    }
    if (!entry.models.some((m) => m.id === model))
      return no(
        `provider '${provider}' does not offer model '${model}'; it offers ` +
          `[${entry.models.map((m) => m.id).join(", ")}]`,
      );
    return { ok: true, provider: entry.name, extension: entry.extension, model };
  }
  const entry = usable.find((p) => p.models.some((m) => m.id === model));
  if (entry === undefined) {
    const waiter = ranked.providers.find((p) => waiting(p) && p.models.some((m) => m.id === model));
    const why =
      waiter === undefined
        ? ""
        : ` ('${waiter.name}' does, but its satellite waits on this very call: ${describeChain(ask.chain)})`;
    return no(`no provider it may ask offers model '${model}'${why}; it may ask ${listed(usable)}`);
  }
  return { ok: true, provider: entry.name, extension: entry.extension, model };
}

/** US dollars, from the catalog's prices (none when the model is not in the catalog any more). */
function costOf(host: KernelHost, provider: string, model: string, input: number, output: number): number | undefined {
  const row = providerCatalog(host)
    .providers.find((p) => p.name === provider)
    ?.models.find((m) => m.id === model);
  if (row === undefined) return undefined;
  return (input * row.input_price_per_mtok + output * row.output_price_per_mtok) / 1_000_000;
}

export function modelPort(host: KernelHost): ModelPort {
  return {
    choose: (ask) => choose(host, ask),
    session: (sessionId) => (sessionId === DAEMON_SCOPE ? null : host.scope(sessionId).models),
    complete: async (ask, provider, options): Promise<ModelOutcome> => {
      const session = sessionOf(ask);
      let report;
      try {
        report = await complete(
          host,
          { ...ask.request, provider },
          {
            ...(session !== undefined ? { session } : {}),
            onPartial: options.onDelta,
            signal: options.signal,
            chain: ask.chain,
          },
        );
      } catch (err) {
        // The broker closed, or a request the bridge refuses: its words (never a stack).
        if (err instanceof TetherError) return { ok: false, code: err.code, msg: err.message };
        throw err;
      }
      const o = report.outcome;
      if (!o.ok) return { ok: false, code: o.error.code, msg: o.error.msg };
      const cost = costOf(host, provider, ask.request.model, o.usage.input_tokens, o.usage.output_tokens);
      return {
        ok: true,
        text: o.text,
        usage: o.usage,
        stopReason: o.stopReason,
        model: o.model,
        provider,
        invocationId: report.invocationId,
        ...(cost !== undefined ? { costUsd: cost } : {}),
      };
    },
  };
}
