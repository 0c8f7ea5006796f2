/**
 * The SDK's low-level `Server`, watching something for as long as it is
 * connected: `watch` is called as a transport connects, and what it returns
 * (the unwatch) when that transport closes — so a server whose client went
 * away leaves no listener behind on a session that outlives it.
 */
import { Server, type ServerOptions } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Implementation } from "@modelcontextprotocol/sdk/types.js";

export class WatchingServer extends Server {
  readonly #watch: () => () => void;

  constructor(info: Implementation, options: ServerOptions, watch: () => () => void) {
    super(info, options);
    this.#watch = watch;
  }

  override async connect(transport: Transport): Promise<void> {
    const unwatch = this.#watch();
    // The SDK calls a transport's own onclose before its own close handling.
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
