/**
 * Argument decoding whose errors name the field: "expected string at .city" is
 * a repair instruction the model can act on; "bad arguments" is a dead end.
 */
import * as v from "valibot";

/**
 * Thrown by {@linkcode decodeArgs}; `answer` turns it into a `bad_arguments` answer.
 *
 * @example
 * ```ts
 * import { BadArguments } from "@tether/ext";
 * throw new BadArguments("expected string at .city, got 5");
 * ```
 */
export class BadArguments extends Error {
  override readonly name = "BadArguments";
}

function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  const where = path ? ` at .${path}` : "";
  if (issue.kind === "schema" && issue.expected !== null) {
    return issue.received === "undefined"
      ? `missing ${issue.expected}${where}`
      : `expected ${issue.expected}${where}, got ${issue.received}`;
  }
  return `${issue.message}${where}`;
}

/**
 * Renders every issue valibot found, one clause each.
 *
 * @example
 * ```ts
 * import { describeArgIssues, v } from "@tether/ext";
 * const r = v.safeParse(v.object({ city: v.string() }), { city: 5 });
 * if (!r.success) describeArgIssues(r.issues); // "expected string at .city, got 5"
 * ```
 */
export function describeArgIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues.map(describeIssue).join("; ");
}

/**
 * Checks decoded arguments against a valibot schema and returns them typed.
 * Throws {@linkcode BadArguments} naming every field that failed.
 *
 * @example
 * ```ts
 * import { decodeArgs, v } from "@tether/ext";
 * const { city } = decodeArgs(v.object({ city: v.string() }), { city: "Lisbon" });
 * ```
 */
export function decodeArgs<S extends v.GenericSchema>(schema: S, args: unknown): v.InferOutput<S> {
  const parsed = v.safeParse(schema, args, { abortEarly: false });
  if (!parsed.success) throw new BadArguments(describeArgIssues(parsed.issues));
  return parsed.output;
}
