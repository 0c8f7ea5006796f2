/**
 * The signal that one invocation ended, made only when something asks for it:
 * a capability call's work listens to it, and most invocations make none, so
 * most never pay for an AbortController. Asked after the end, it is already
 * aborted.
 */
import { setMaxListeners } from "node:events";

export class InvocationEnd {
  #controller: AbortController | null = null;
  #ended = false;

  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      // Each of its fetches in flight listens to it (up to `[limits] fetches`): not a leak.
      setMaxListeners(0, this.#controller.signal);
      if (this.#ended) this.#controller.abort(new Error("the invocation ended"));
    }
    return this.#controller.signal;
  }

  end(): void {
    this.#ended = true;
    this.#controller?.abort(new Error("the invocation ended"));
  }
}
