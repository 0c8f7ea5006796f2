import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

/** Where `tether serve` is and how to authenticate; each falls back to its environment variable. */
export interface TetherPiOptions {
  /** `ws://127.0.0.1:<port>` or `ws+unix:<socket path>` (TETHER_URL; default ws+unix:<home>/tether.sock). */
  readonly url?: string;
  /** The bearer token itself (TETHER_TOKEN). */
  readonly token?: string;
  /** A file holding it (TETHER_TOKEN_FILE; default <home>/serve.token). */
  readonly tokenFile?: string;
  /** The Tether home the defaults are under (TETHER_HOME; default ~/.tether). */
  readonly home?: string;
  /** The Tether session id (TETHER_SESSION; default `pi-<pi's session id>`). */
  readonly session?: string;
}

/** The extension with these options (an SDK user passes it among `extensionFactories`). */
export declare function createTetherExtension(options?: TetherPiOptions): (pi: ExtensionAPI) => Promise<void>;

/** The extension configured by the environment alone: what `pi -e @tether/pi` loads. */
declare const tether: (pi: ExtensionAPI) => Promise<void>;
export default tether;
