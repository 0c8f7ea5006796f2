/**
 * Jest globalSetup of the `fleet` project (jest.config.js; its teardown is
 * postgres-global-teardown.mjs): one throwaway PostgreSQL server
 * (tests/support/postgres-server.ts) for the whole run, its URL handed to the
 * test files in TETHER_TEST_POSTGRES_URL (TCP, with the password), and
 * TETHER_TEST_POSTGRES_SOCKET_URL (the Unix socket) and TETHER_TEST_POSTGRES_BIN
 * (the folder of its psql) beside it.
 *
 * Why one per run and not one per file: the fleet tests are about several
 * brokers sharing one store, and initdb + start costs 1.3–2 s per server (stop
 * 0.2–0.4 s); a file that needs a server of its own (to stop it, say) calls
 * `startPostgres()` itself. Jest runs a project's globalSetup in its parent
 * process before it starts any worker, and only when that project has tests to
 * run (`make unit` starts no server); workers inherit the parent's environment,
 * so the variable reaches every file. The server object stays on `globalThis`
 * of that parent process for the teardown. If jest dies before the teardown,
 * the server's exit handler and watchdog stop it.
 *
 * Plain .mjs loading the TypeScript helper through tsx's `tsImport`: jest
 * transpiles a .ts globalSetup but then loads it outside its module system, so
 * its `./postgres-server.js` import (resolved to the .ts by jest's
 * moduleNameMapper inside tests) is not found.
 */
import { tsImport } from "tsx/esm/api";

export default async function globalSetup() {
  /** @type {typeof import("./postgres-server.js")} */
  const { startPostgres } = await tsImport("./postgres-server.ts", import.meta.url);
  const server = await startPostgres();
  globalThis[Symbol.for("tether.test.postgres")] = server;
  process.env.TETHER_TEST_POSTGRES_URL = server.url;
  process.env.TETHER_TEST_POSTGRES_SOCKET_URL = server.socketUrl;
  process.env.TETHER_TEST_POSTGRES_BIN = server.bin;
}
