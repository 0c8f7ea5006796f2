/**
 * A session's run state, for `model.complete` (exclusive work; the port in
 * broker/base/model-port.ts). A **run is active** from the moment the harness
 * fires `before_agent_start` until the turn ends: an `agent_end` whose hooks
 * let it end (no block that keeps it going), or `agent_settled`; a
 * `before_agent_start` its hooks block or halt starts none. While a run is
 * active, while another `model.complete` of the session is in flight, and once
 * the session begins to close, a model call is refused (`busy_session`, the
 * rule naming which); the call in flight when the session begins to close is
 * aborted. Each call that completes is told here: the session fires `usage`
 * with `origin: "extension:<name>"` (not waited for: the asking extension's
 * own satellite is busy with the call).
 */
import type { WaitChain } from "../base/waits.js";
import type { Composed } from "../hooks/compose.js";
import type { ModelBusy, ModelOutcome, SessionModels } from "../base/model-port.js";
import type { EventPayload } from "../../jail-runtime/wire/events.js";

export class ModelRuns implements SessionModels {
  readonly #id: string;
  readonly #fireUsage: (payload: EventPayload<"usage">, chain: WaitChain) => Promise<unknown>;
  readonly #closing = new AbortController();
  /** `before_agent_start` fired, the turn not ended. */
  #run = false;
  /** The extension whose model call is in flight, if any. */
  #inFlight: string | null = null;

  constructor(id: string, fireUsage: (payload: EventPayload<"usage">, chain: WaitChain) => Promise<unknown>) {
    this.#id = id;
    this.#fireUsage = fireUsage;
  }

  /** Whether a run is active (the harness's turn). */
  get running(): boolean {
    return this.#run;
  }

  admit(extension: string): { ok: true; signal: AbortSignal; release(): void } | ModelBusy {
    const busy = (rule: string, why: string): ModelBusy => ({
      ok: false,
      rule,
      msg: `model.complete is exclusive work and session '${this.#id}' ${why}`,
    });
    if (this.#closing.signal.aborted) return busy("session.closing", "is closing");
    if (this.#run)
      return busy(
        "session.run_active",
        "has a run active (before_agent_start fired, the turn has not ended): call models between turns, e.g. " +
          "from a command, a route or a compaction strategy",
      );
    if (this.#inFlight !== null)
      return busy(
        "session.model_call",
        `has another model call in flight (by '${this.#inFlight}'): one at a time, retry when it ends`,
      );
    this.#inFlight = extension;
    let released = false;
    return {
      ok: true,
      signal: this.#closing.signal,
      release: () => {
        if (released) return;
        released = true;
        this.#inFlight = null;
      },
    };
  }

  used(extension: string, outcome: Extract<ModelOutcome, { ok: true }>, chain: WaitChain): void {
    // Fired for the asking invocation, which is still open: its hooks leave the satellites on its chain
    // out (one asking the asker would queue behind the very call that fired it).
    this.#fireUsage(
      {
        seq: outcome.invocationId ?? 0,
        origin: `extension:${extension}`,
        model: outcome.model,
        input_tokens: outcome.usage.input_tokens,
        output_tokens: outcome.usage.output_tokens,
        ...(outcome.costUsd !== undefined ? { cost_usd: outcome.costUsd } : {}),
      },
      chain,
    ).catch(() => {
      // Notify-only: a closed session or a failing hook changes nothing for the call.
    });
  }

  /** Follows the turn through the harness's events: `fire` is the bus's. */
  async fired(event: string, fire: () => Promise<Composed>): Promise<Composed> {
    if (event === "agent_settled") this.#run = false;
    if (event !== "before_agent_start") {
      const composed = await fire();
      if (event === "agent_end" && composed.block === null) this.#run = false;
      return composed;
    }
    this.#run = true;
    try {
      const composed = await fire();
      if (composed.block !== null || composed.halt !== null) this.#run = false;
      return composed;
    } catch (err) {
      this.#run = false;
      throw err;
    }
  }

  /** The session begins to close: no more model calls, and the one in flight is aborted. */
  close(): void {
    this.#closing.abort(new Error(`session '${this.#id}' is closing`));
  }
}
