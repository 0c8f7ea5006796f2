/**
 * One Tether session on `tether serve`, as pi's extension uses it: opened for
 * pi's session, its tools listed, events fired only when an active extension
 * hooks them (a conversation is not sent to the broker for nothing), tool
 * calls, and a close that waits for what is still in flight.
 */
import { FireAnswer, OpenAnswer, ToolCallAnswer, ToolsAnswer, parseAnswer } from "./answers.js";
import { ServeError } from "./serve-client.js";

export class TetherSession {
  /**
   * Opens (or rejoins: sessions belong to the server) session `id` on `workspace`.
   * @param {import("./serve-client.js").ServeClient} client
   * @param {{ id: string, workspace: string }} where
   */
  static async open(client, { id, workspace }) {
    let answer;
    try {
      answer = parseAnswer(OpenAnswer, await client.request("session.open", { id, workspace }), "session.open");
    } catch (error) {
      if (error instanceof ServeError && error.tetherCode === "session_conflict")
        throw new Error(
          `Tether: session '${id}' is open on another workspace. Set TETHER_SESSION to another id, ` +
            `or close it (tether session close ${id}).`,
        );
      throw error;
    }
    return new TetherSession(client, id, answer.extensions);
  }

  /**
   * @param {import("./serve-client.js").ServeClient} client
   * @param {string} id
   * @param {ReadonlyArray<{ name: string, state: string, reason: string | null, hooks: string[] }>} extensions
   */
  constructor(client, id, extensions) {
    this.client = client;
    this.id = id;
    /** The events at least one active extension hooks. */
    this.hooked = new Set(extensions.filter((e) => e.state === "active").flatMap((e) => e.hooks));
    /** Extensions that did not start, with why (the user should know their tools are missing). */
    this.inactive = extensions.filter((e) => e.state === "inactive").map((e) => `${e.name}: ${e.reason ?? "inactive"}`);
    /** @type {Set<Promise<unknown>>} requests not yet answered, so close() can wait for them */
    this.inFlight = new Set();
    this.closing = false;
  }

  /**
   * @template T
   * @param {Promise<T>} promise
   * @returns {Promise<T>}
   */
  track(promise) {
    this.inFlight.add(promise);
    const done = () => this.inFlight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  async tools() {
    return parseAnswer(ToolsAnswer, await this.client.request("session.tools", { session: this.id }), "session.tools");
  }

  /**
   * The composed verdict of `event`'s hooks, or null when none hooks it.
   * @param {string} event
   * @param {Record<string, unknown>} payload
   * @returns {Promise<import("./answers.js").FireVerdict | null>}
   */
  async fire(event, payload) {
    if (!this.hooked.has(event) || this.closing) return null;
    const answer = await this.track(this.client.request("session.fire", { session: this.id, event, payload }));
    return parseAnswer(FireAnswer, answer, "session.fire");
  }

  /**
   * Calls `tool` with the hook bus around it; partials go to `onPartial`, `signal` cancels.
   * @param {string} tool
   * @param {unknown} args
   * @param {string} callId
   * @param {{ onPartial?: (text: string) => void, signal?: AbortSignal }} options
   */
  async callTool(tool, args, callId, options) {
    const params = { session: this.id, tool, arguments: args, call_id: callId };
    const answer = await this.track(this.client.request("tool.call", params, options));
    return parseAnswer(ToolCallAnswer, answer, "tool.call");
  }

  /** Sends no more events and waits for the requests in flight to be answered. */
  async settle() {
    this.closing = true;
    await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Lets fires and calls in flight answer, then closes the session (SessionEnd hooks run, satellites stop).
   * @param {string} reason what SessionEnd hooks are told (pi's shutdown reason: quit, reload, new, …)
   */
  async close(reason) {
    await this.settle();
    await this.client.request("session.close", { session: this.id, reason });
  }
}
