/**
 * What a tool answers: content blocks, a terminate flag, or a refusal.
 */

/** One block of a tool's reply: text the model reads, or a JSON value. */
export type Content = { type: "text"; text: string } | { type: "json"; json: unknown };

/**
 * Whether the agent's run goes on after this tool: a named value rather than a
 * bare boolean, so a call site says which it means.
 */
export type Terminate = "continue" | "terminate";

/** A tool's successful answer. */
export interface Outcome {
  readonly content: readonly Content[];
  readonly terminate: Terminate;
}

/**
 * A refusal is a value, not a throw: text the model reads and can repair.
 * A throw is a crash the harness reports and the model can do nothing with.
 */
export interface Refusal {
  readonly refusal: string;
}

/**
 * A text block.
 *
 * @example
 * ```ts
 * import { outcome, text } from "@tether/ext";
 * const reply = outcome([text("Sunny, 21°C")]);
 * ```
 */
export function text(value: string): Content {
  return { type: "text", text: value };
}

/**
 * A JSON block. It travels to the harness as its value; keep it to plain data.
 *
 * @example
 * ```ts
 * import { json, outcome } from "@tether/ext";
 * const reply = outcome([json({ temperature: 21 })]);
 * ```
 */
export function json(value: unknown): Content {
  return { type: "json", json: value };
}

/**
 * Builds an outcome; the run continues unless `terminate` says otherwise.
 *
 * @example
 * ```ts
 * import { outcome, text } from "@tether/ext";
 * const done = outcome([text("All files written")], { terminate: "terminate" });
 * ```
 */
export function outcome(content: readonly Content[], options: { terminate?: Terminate } = {}): Outcome {
  return { content, terminate: options.terminate ?? "continue" };
}

/**
 * A refusal the model reads.
 *
 * @example
 * ```ts
 * import { refuse } from "@tether/ext";
 * const no = refuse("City must be a real place name, e.g. \"Lisbon\"");
 * ```
 */
export function refuse(reason: string): Refusal {
  return { refusal: reason };
}

/**
 * True when a tool's answer is a refusal.
 *
 * @example
 * ```ts
 * import { isRefusal, refuse } from "@tether/ext";
 * isRefusal(refuse("no")); // true
 * ```
 */
export function isRefusal(value: unknown): value is Refusal {
  return typeof value === "object" && value !== null && typeof (value as { refusal?: unknown }).refusal === "string";
}
