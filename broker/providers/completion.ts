/**
 * The completion bridge: a harness asks for a completion; the broker picks the
 * provider (the one named, else the first of the session's ranking that offers
 * the model), asks its extension's daemon satellite one invocation of kind
 * `complete`, passes each partial on as it is reported, and checks the answer
 * whole. The satellite reaches the provider's API only through `net.fetch`,
 * judged and audited under the daemon scope's id.
 */
import type { WaitChain } from "../base/waits.js";
import * as v from "valibot";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import { CompletionRequest, MAX_COMPLETION_REQUEST_BYTES, type Usage } from "../../jail-runtime/wire/provider-kinds.js";
import type { SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import type { KernelHost } from "../kernel/host.js";
import { decodeSessionAnswer } from "../sessions/ask-session-kind.js";
import { providerPreferencesOf } from "../store/rank-preferences-repository.js";
import { providerCatalog, type ProviderEntry } from "./catalog.js";
import { DAEMON_SCOPE, pruneDaemon } from "./daemon.js";
import { rankProviders } from "./ranking.js";

export interface CompletionOptions {
  /** The session asking: its provider preference ranks and excludes, and the provider is told its id. */
  readonly session?: string;
  /** Each partial (a delta of the completion's text), in order. Best effort, as a tool's partials. */
  readonly onPartial?: (text: string) => void;
  /** Cancels the completion (it ends `cancelled`). */
  readonly signal?: AbortSignal;
  /** When a capability call asks (`model.complete`): the satellites waiting on it (broker/base/waits.ts). */
  readonly chain?: WaitChain;
}

export type CompletionOutcome =
  | {
      readonly ok: true;
      readonly text: string;
      readonly usage: Usage;
      readonly stopReason: string | null;
      readonly model: string;
    }
  | Failure;

export interface CompletionReport {
  readonly outcome: CompletionOutcome;
  /** The provider chosen (null when none could be). */
  readonly provider: string | null;
  readonly extension: string | null;
  readonly model: string;
  /** The invocation's ledger row, in the daemon scope. */
  readonly invocationId: number | null;
  readonly notes: readonly string[];
}

/** Checks a request from a caller; throws `bad_arguments` (JSON-RPC -32602) naming the field. */
export function checkCompletionRequest(input: unknown): v.InferOutput<typeof CompletionRequest> {
  const bytes = Buffer.byteLength(JSON.stringify(input) ?? "");
  if (bytes > MAX_COMPLETION_REQUEST_BYTES)
    throw new TetherError(
      WireCode.badArguments,
      `The completion request is ${bytes} bytes; at most ${MAX_COMPLETION_REQUEST_BYTES} (8 MiB) as JSON`,
    );
  const checked = v.safeParse(CompletionRequest, input);
  if (!checked.success)
    throw new TetherError(WireCode.badArguments, `Not a completion request: ${describeIssues(checked.issues)}`);
  return checked.output;
}

const names = (entries: readonly { name: string }[]) => `[${entries.map((e) => e.name).join(", ")}]`;

/** The provider for `request`, or the failure that says why none. */
function choose(
  broker: KernelHost,
  request: v.InferOutput<typeof CompletionRequest>,
  session: string | undefined,
): { entry: ProviderEntry; notes: readonly string[] } | Failure {
  const catalog = providerCatalog(broker);
  // Not waited for: what it stops is no longer chosen anyway.
  pruneDaemon(broker, catalog).catch(() => {});
  const ranked = rankProviders(
    catalog,
    session === undefined ? null : providerPreferencesOf(broker.store).get(session),
  );
  const model = request.model;
  if (request.provider !== undefined) {
    const name = request.provider;
    const entry = catalog.providers.find((p) => p.name === name);
    if (entry === undefined) {
      const missing = catalog.unavailable.find((u) => u.provider === name);
      if (missing !== undefined)
        return failure(
          BrokerCode.inactive,
          `Provider '${name}' of '${missing.extension}' is not served: ${missing.reason}`,
        );
      return failure(WireCode.unknownTool, `Unknown provider '${name}'; the broker serves ${names(catalog.providers)}`);
    }
    if (ranked.excluded.includes(name))
      return failure(
        BrokerCode.inactive,
        `Provider '${name}' is excluded by session '${session}'s preference; remove it from the exclusions to use it`,
      );
    if (!entry.models.some((m) => m.id === model))
      return failure(
        WireCode.unknownTool,
        `Provider '${name}' does not offer model '${model}'; it offers [${entry.models.map((m) => m.id).join(", ")}]`,
      );
    return { entry, notes: ranked.notes };
  }
  const entry = ranked.providers.find((p) => p.models.some((m) => m.id === model));
  if (entry === undefined) {
    const excluded = ranked.excluded.length > 0 ? `; session '${session}' excludes ${ranked.excluded.join(", ")}` : "";
    return failure(
      WireCode.unknownTool,
      `No provider offers model '${model}'; the broker serves ${names(ranked.providers)}${excluded}`,
    );
  }
  return { entry, notes: ranked.notes };
}

/**
 * Asks for one completion. Never rejects for a provider's faults
 * (they are the outcome); a malformed request throws `bad_arguments`.
 */
export async function complete(
  broker: KernelHost,
  input: unknown,
  options: CompletionOptions = {},
): Promise<CompletionReport> {
  if (broker.closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
  const request = checkCompletionRequest(input);
  const chosen = choose(broker, request, options.session);
  if ("ok" in chosen)
    return { outcome: chosen, provider: null, extension: null, model: request.model, invocationId: null, notes: [] };
  const { entry, notes } = chosen;
  const payload: SessionPayload<"complete"> = {
    ...request,
    provider: entry.name,
    base_url: entry.base_url,
    secret: entry.secret,
    session_id: options.session ?? null,
  };
  const report = (outcome: CompletionOutcome, invocationId: number | null): CompletionReport => ({
    outcome,
    provider: entry.name,
    extension: entry.extension,
    model: request.model,
    invocationId,
    notes,
  });
  const what = `Provider '${entry.name}' of '${entry.extension}'`;
  let result;
  try {
    result = await broker.scope(DAEMON_SCOPE).invoke(entry.extension, "complete", entry.name, JSON.stringify(payload), {
      ...(options.onPartial !== undefined ? { onReport: options.onPartial } : {}),
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      ...(options.chain !== undefined ? { chain: options.chain } : {}),
    });
  } catch (err) {
    // The broker refused it (closed, approval gone since the catalog was read): said as the outcome.
    if (err instanceof TetherError && err.code !== BrokerCode.closed)
      return report(failure(err.code, `${what}: ${err.message}`), null);
    throw err;
  }
  const { outcome, invocationId } = result;
  if (!outcome.ok) return report(failure(outcome.error.code, `${what} failed: ${outcome.error.msg}`), invocationId);
  const decoded = decodeSessionAnswer("complete", outcome.value);
  if (!decoded.ok)
    return report(failure(WireCode.crashed, `${what} answered what it may not: ${decoded.problem}`), invocationId);
  const a = decoded.answer;
  return report(
    { ok: true, text: a.text, usage: a.usage, stopReason: a.stop_reason ?? null, model: a.model ?? request.model },
    invocationId,
  );
}
