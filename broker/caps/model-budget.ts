/**
 * The day's token budget of `model.complete` (`[model] max_tokens_per_day`):
 * per extension and UTC day, the tokens its calls used (input + output, as the
 * providers reported them) plus what calls in flight may still use (each
 * reserves its `max_tokens` until it ends). What a day used is read once from
 * the audit (a `model.complete` row's `bytes` is the tokens that call used),
 * then kept here: one broker's count; the hosts of a fleet count apart.
 */
import { modelTokensSince } from "../store/model-usage.js";
import type { Store } from "../store/open.js";

const DAY_MS = 86_400_000;

interface Day {
  readonly day: number;
  used: number;
  reserved: number;
}

export class ModelBudget {
  readonly #store: Store;
  readonly #days = new Map<string, Day>();

  constructor(store: Store) {
    this.#store = store;
  }

  #today(extension: string, now: number): Day {
    const day = Math.floor(now / DAY_MS);
    const held = this.#days.get(extension);
    if (held !== undefined && held.day === day) return held;
    const used = modelTokensSince(this.#store, extension, day * DAY_MS);
    const fresh: Day = { day, used, reserved: held?.day === day ? held.reserved : 0 };
    this.#days.set(extension, fresh);
    return fresh;
  }

  /** What the day has left for `extension` now (used and reserved taken off). */
  left(extension: string, perDay: number, now = Date.now()): number {
    const d = this.#today(extension, now);
    return perDay - d.used - d.reserved;
  }

  /** Holds `tokens` of the day for a call in flight; the returned end counts what it used instead. */
  reserve(extension: string, tokens: number, now = Date.now()): (used: number) => void {
    const d = this.#today(extension, now);
    d.reserved += tokens;
    let ended = false;
    return (used) => {
      if (ended) return;
      ended = true;
      d.reserved -= tokens;
      // A call that began yesterday counts today, where its audit row is.
      this.#today(extension, Date.now()).used += used;
    };
  }
}

const budgets = new WeakMap<Store, ModelBudget>();

/** The one budget of a broker's store. */
export function modelBudget(store: Store): ModelBudget {
  let budget = budgets.get(store);
  if (budget === undefined) budgets.set(store, (budget = new ModelBudget(store)));
  return budget;
}
