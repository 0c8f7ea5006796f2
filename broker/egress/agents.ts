/**
 * The broker's pooled connections for brokered requests: keep-alive agents
 * pinned to one judged address, reused only for that same (extension, origin,
 * address) — one extension's requests never wait behind another's sockets.
 * One pool per broker (its `close()` closes only its own sockets), bounded in
 * agents and in sockets per agent; an agent evicted from the pool is closed at
 * once, so the pool never holds more sockets than its bound.
 */
import type { LookupFunction } from "node:net";
import type { Agent } from "undici";
import { undici } from "./undici.js";

/**
 * Agents kept; each holds at most SOCKETS_PER_AGENT sockets, as many as one
 * extension may have fetches in flight (so an origin is never the narrower
 * bound): at most 256 pooled connections, idle ones closed after 10 s.
 */
export const MAX_AGENTS = 16;
export const SOCKETS_PER_AGENT = 16;

/** A lookup that answers `address` for any name: the connection goes where the judge looked, never looked up again. */
export function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address, family },
      ]);
    else callback(null, address, family);
  };
}

export class EgressAgents {
  readonly #agents = new Map<string, Agent>();
  #closed = false;

  /** The agent for (extension, origin, address): connects to `address` only, the name never looked up again. */
  async pinned(extension: string, origin: string, address: string, family: 4 | 6): Promise<Agent> {
    const { Agent } = await undici();
    // After the load: the pool may have closed while undici loaded.
    if (this.#closed) throw new Error("the broker's egress pool is closed");
    const key = `${extension}\u0000${origin}|${address}`;
    let agent = this.#agents.get(key);
    if (agent !== undefined) {
      this.#agents.delete(key);
      this.#agents.set(key, agent); // most recently used last
      return agent;
    }
    agent = new Agent({
      connect: { lookup: pinnedLookup(address, family) },
      keepAliveTimeout: 10_000,
      connections: SOCKETS_PER_AGENT,
    });
    this.#agents.set(key, agent);
    if (this.#agents.size > MAX_AGENTS) {
      const [oldest, old] = this.#agents.entries().next().value as [string, Agent];
      this.#agents.delete(oldest);
      // Idle sockets close now; a request still on it keeps its socket until it ends (its
      // fetch holds a slot of the broker's budget, so the total stays bounded).
      void old.close();
    }
    return agent;
  }

  get size(): number {
    return this.#agents.size;
  }

  /** Closes every pooled connection once the requests on them end. */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(all.map((a) => a.close()));
  }

  /** Destroys every connection now, requests on them included. */
  async destroy(): Promise<void> {
    this.#closed = true;
    const all = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(all.map((a) => a.destroy()));
  }
}
