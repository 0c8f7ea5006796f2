import type { Outcome, Refusal } from "./content.js";
import type { Ctx } from "./ctx.js";

/**
 * A tool: decoded JSON arguments (their shape is the manifest's `parameters`
 * schema, already checked by the broker) and the call's context in; an outcome
 * or a refusal out. A throw is answered `crashed` and the satellite goes on.
 */
export type Tool = (args: unknown, ctx: Ctx) => Outcome | Refusal | Promise<Outcome | Refusal>;

/** A command handler: `/name args` with the raw argument text. */
export type Command = (args: string, ctx: Ctx) => Outcome | Refusal | Promise<Outcome | Refusal>;
