/**
 * Jest globalTeardown of the `fleet` project: stops the server
 * postgres-global-setup.mjs started (same jest parent process: it is on `globalThis`).
 */
export default async function globalTeardown() {
  const key = Symbol.for("tether.test.postgres");
  const server = globalThis[key];
  delete globalThis[key];
  await server?.stop();
}
