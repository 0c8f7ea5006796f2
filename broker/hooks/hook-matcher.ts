/**
 * Hook matchers: the regular-expression matchers of command hooks
 * (docs/hooks.md, "Matchers"), and the globs of a manifest's `[[hook]] match`
 * (docs/hooks.md, "Hook matchers").
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

/**
 * Whether `glob` matches all of `value`: `*` is any run of characters (none
 * included), `?` exactly one, everything else itself (case matters). Walked
 * without a RegExp, so no pattern can make it backtrack: at worst
 * length(glob) × length(value) steps.
 */
export function globMatches(glob: string, value: string): boolean {
  let g = 0;
  let s = 0;
  // Where the last `*` was, and how much of `value` it has swallowed so far.
  let star = -1;
  let swallowed = 0;
  while (s < value.length) {
    if (g < glob.length && (glob[g] === "?" || (glob[g] !== "*" && glob[g] === value[s]))) {
      g += 1;
      s += 1;
    } else if (g < glob.length && glob[g] === "*") {
      star = g;
      swallowed = s;
      g += 1;
    } else if (star >= 0) {
      // Let the last `*` take one more character and try again from there.
      g = star + 1;
      swallowed += 1;
      s = swallowed;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob[g] === "*") g += 1;
  return g === glob.length;
}
