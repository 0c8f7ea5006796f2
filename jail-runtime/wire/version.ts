/**
 * The version of the broker ⇄ satellite protocol (`frames.ts`, `codes.ts`,
 * `events.ts`). It changes only when a satellite built against one version can
 * no longer talk to a broker of another. The serving loop says it in `hello`
 * (`tether-deno/<version>`), and the SDK's npm packages (`packages/`) carry it
 * as their major version: `@tether/ext@1.x` speaks wire version 1.
 */
export const WIRE_VERSION = 1;
