/**
 * An initializer (`[init]`): what a module exports as `init`. The broker runs
 * it once per approved version of the extension — right after `tether
 * approve`, or before the first invocation a broker makes of a version not yet
 * initialized — in its daemon scope, bounded by `[init] deadline_ms`
 * (payload `init`, jail-runtime/wire/session-kinds.ts). A throw leaves the
 * extension inactive until a later broker start runs it again (docs/initializers.md).
 *
 * @example
 * ```ts
 * import { db } from "@tether/cap";
 * import type { Init } from "@tether/ext";
 * export const init: Init = async (payload) => {
 *   await db.exec("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)");
 *   return { message: `ready for ${payload.version}` };
 * };
 * ```
 */
import type { Ctx } from "./ctx.js";
import type { SessionPayload, SessionReply } from "../wire/session-kinds.js";

type Returns<T> = T | Promise<T>;

/** What an initializer is handed: `{ version, reason }` (`approved` or `start`). */
export type InitPayload = SessionPayload<"init">;
/** What it answers: `{ message? }`, one line of at most 1024 characters (or nothing). */
export type InitReply = SessionReply<"init">;

export type Init = (payload: InitPayload, ctx: Ctx) => Returns<InitReply | void>;
