/**
 * HTTP services (`[[service]]`): what a module exports as `services`. Each is
 * handed one HTTP request to `/ext/<extension>/…` (payload `service`,
 * jail-runtime/wire/service-kinds.ts), asked in the broker's daemon scope, and
 * answers the response. A throw is a 502 with a fixed body: nothing of it
 * reaches the HTTP client.
 */
import type { Ctx } from "./ctx.js";
import type { SessionPayload, SessionReply } from "../wire/session-kinds.js";

type Returns<T> = T | Promise<T>;

/** One HTTP request as a service sees it. */
export type ServiceRequest = SessionPayload<"service">;
/** Its response: `status` (200–599), `headers`, `body` (text, or base64 with `body_encoding: "base64"`). */
export type ServiceResponse = SessionReply<"service">;

export type Service = (request: ServiceRequest, ctx: Ctx) => Returns<ServiceResponse>;
