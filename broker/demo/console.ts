/**
 * `make demo CONSOLE=1` (`npx tsx broker/demo/run.ts --console`): once the
 * story has run, the operator console over the demo's home — a `tether serve`
 * server (broker/tether-serve/serve-server.ts) on a free port of 127.0.0.1, with a fresh
 * token — reachable for a minute (`TETHER_DEMO_CONSOLE_MS` sets how long;
 * Ctrl-C ends it sooner), then shut down as `tether serve` shuts down.
 */
import { randomBytes } from "node:crypto";
import { Broker, type BrokerOptions } from "../broker.js";
import { createLogger } from "../base/log.js";
import { ServeServer } from "../tether-serve/serve-server.js";

/** How long the console stays up unless TETHER_DEMO_CONSOLE_MS says otherwise (read by broker/cli/environment.ts). */
export const CONSOLE_MS = 60_000;

export interface ConsoleDemoOptions {
  /** The broker's options: the demo's home and environment. */
  readonly broker: Omit<BrokerOptions, "log">;
  /** How long the console stays up (ms). */
  readonly holdMs: number;
  readonly step: (title: string) => void;
  /** Where its lines go (default: stdout). */
  readonly say?: (line: string) => void;
}

/** Serves the console over the demo's home until `holdMs` pass or Ctrl-C (SIGINT) or SIGTERM, then closes it. */
export async function consoleDemo({
  broker: brokerOptions,
  holdMs,
  step,
  say = (line) => console.log(line),
}: ConsoleDemoOptions): Promise<void> {
  step("The operator console: `tether serve` over the demo's home, in a browser");
  const log = createLogger({ level: "error" });
  const broker = Broker.open({ ...brokerOptions, log });
  // A token of this run alone (never written to the home): whoever has it may act as the operator.
  const token = randomBytes(32).toString("hex");
  const server = new ServeServer({ broker, token, log, say: (line) => say(`  ${line}`) });
  let port: number;
  try {
    const { url } = await server.listen({ port: 0 });
    port = Number(new URL(url).port);
  } catch (err) {
    await broker.close();
    throw err;
  }

  // The first signal ends the wait; a second one hurries the shutdown.
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let hurry: () => void = () => {};
  const hurried = new Promise<void>((resolve) => (hurry = resolve));
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!signalled) {
      signalled = true;
      say(`\n  ${signal}: closing the console`);
      stop();
    } else hurry();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const timer = setTimeout(stop, holdMs);

  say(`console: http://127.0.0.1:${port}/console/  token: ${token}`);
  say("  log in: open the URL in a browser on this machine and paste the token into the login form;");
  say(`  the same token lets a harness connect to ws://127.0.0.1:${port} (Authorization: Bearer <token>, docs/api.md)`);
  say(`  reachable for ${holdMs / 1000} s (TETHER_DEMO_CONSOLE_MS sets how long); Ctrl-C closes it sooner`);
  try {
    await stopped;
  } finally {
    clearTimeout(timer);
    // Closes the server's sessions and the broker.
    await server.shutdown(hurried);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
