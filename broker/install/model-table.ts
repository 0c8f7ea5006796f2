/**
 * A manifest's `[model]` table: the extension asks to call models itself
 * (`model.complete` from `@tether/cap`), with a token budget — per call (the
 * request's `max_tokens`) and per day (input and output tokens the providers
 * reported, UTC days) — and optionally only through some providers. It is
 * granted by the approval; declaring it, raising a budget, or a provider
 * more (or none: any) widens an upgrade.
 */
import * as v from "valibot";

/** The most tokens a budget may name (ten billion: far past any day's use, short of float trouble). */
export const MAX_MODEL_TOKENS = 10_000_000_000;

const Tokens = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_MODEL_TOKENS));
const ProviderName = v.pipe(
  v.string(),
  v.regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "expected a provider's name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
  ),
);

export const ModelTable = v.strictObject({
  /** Only these providers (`[[provider]]` names of other extensions); left out: any served provider. */
  providers: v.optional(v.pipe(v.array(ProviderName), v.minLength(1), v.maxLength(64))),
  /** A call's `max_tokens` may be at most this. */
  max_tokens_per_call: Tokens,
  /** Tokens (input + output) its calls may use in one UTC day, on this broker. */
  max_tokens_per_day: Tokens,
});

/** What the schema cannot say (the published JSON Schema has no cross-field checks): each problem, named. */
export function modelTableProblems(table: ModelTable | undefined, file: string): string[] {
  if (table === undefined) return [];
  const problems: string[] = [];
  if (table.max_tokens_per_call > table.max_tokens_per_day)
    problems.push(
      `${file}: model.max_tokens_per_call (${table.max_tokens_per_call}) is more than model.max_tokens_per_day ` +
        `(${table.max_tokens_per_day}): no call could ever fit the day's budget`,
    );
  const twice = (table.providers ?? []).filter((p, i, all) => all.indexOf(p) !== i);
  if (twice.length > 0) problems.push(`${file}: model.providers names ${[...new Set(twice)].join(", ")} twice`);
  return problems;
}
export type ModelTable = v.InferOutput<typeof ModelTable>;

/** What an approval grants of it. */
export const ModelGrant = v.object({
  providers: v.nullable(v.array(v.string())),
  max_tokens_per_call: v.number(),
  max_tokens_per_day: v.number(),
});
export type ModelGrant = v.InferOutput<typeof ModelGrant>;

/** The grant `[model]` asks for (absent: the manifest asks for none). */
export function modelGrant(table: ModelTable | undefined): ModelGrant | undefined {
  if (table === undefined) return undefined;
  return {
    providers: table.providers === undefined ? null : [...table.providers].sort(),
    max_tokens_per_call: table.max_tokens_per_call,
    max_tokens_per_day: table.max_tokens_per_day,
  };
}

/** How the grant widens: `model`, then one `model provider <name>` each (`*`: any). */
export function modelItems(grant: ModelGrant | undefined): string[] {
  if (grant === undefined) return [];
  return ["model", ...(grant.providers ?? ["*"]).map((p) => `model provider ${p}`)];
}

/** Its budgets as limits (a raised one widens as a raised `[limits]` does); none granted counts as 0. */
export function modelLimits(grant: ModelGrant | undefined): Array<[string, number]> {
  return [
    ["model.max_tokens_per_call", grant?.max_tokens_per_call ?? 0],
    ["model.max_tokens_per_day", grant?.max_tokens_per_day ?? 0],
  ];
}

/** What `tether review` says of it. */
export function modelReviewLines(table: ModelTable | undefined, isNew: boolean): string[] {
  if (table === undefined) return [];
  const through =
    table.providers === undefined ? "any provider the broker serves" : `only ${table.providers.join(", ")}`;
  return [
    `It calls models itself (capability model.complete; sends what it chooses of what it sees to the provider): ` +
      `${through}; at most ${table.max_tokens_per_call} tokens a call, ${table.max_tokens_per_day} a day` +
      `${isNew ? "   [NEW]" : ""}`,
  ];
}
