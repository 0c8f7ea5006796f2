/**
 * The engine (protocol/engine.ts), watching something for as long as it is
 * connected: `watch` is called as a transport connects, and what it returns
 * (the unwatch) when that transport closes — so a server whose client went
 * away leaves no listener behind on a session that outlives it.
 */
import { McpEngine, type EngineOptions, type ServerInfo } from "./protocol/engine.js";
import type { Transport } from "./protocol/transport.js";

export class WatchingServer extends McpEngine {
  readonly #watch: () => () => void;

  constructor(info: ServerInfo, options: EngineOptions, watch: () => () => void) {
    super(info, options);
    this.#watch = watch;
  }

  override async connect(transport: Transport): Promise<void> {
    const unwatch = this.#watch();
    // The engine calls a transport's own onclose before its own close handling.
    const prior = transport.onclose;
    transport.onclose = () => {
      unwatch();
      prior?.();
    };
    try {
      await super.connect(transport);
    } catch (err) {
      unwatch();
      throw err;
    }
  }
}
