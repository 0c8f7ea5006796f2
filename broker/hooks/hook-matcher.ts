/**
 * Matchers of command hooks (docs/hooks.md, "Matchers"): what a matcher
 * accepts, and whether one written in hooks.json is valid.
 */

/** Tests a matcher against a subject: see docs/hooks.md, "Matchers". */
export function matches(matcher: string | undefined, value: string): boolean {
  if (matcher === undefined || matcher === "" || matcher === "*") return true;
  if (/^[\w|]+$/.test(matcher)) return matcher.split("|").includes(value);
  return new RegExp(matcher).test(value);
}

/** Why a matcher is not a valid regular expression, or null when it is fine. */
export function regexProblem(matcher: string): string | null {
  if (matcher === "" || matcher === "*" || /^[\w|]+$/.test(matcher)) return null;
  try {
    new RegExp(matcher);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
