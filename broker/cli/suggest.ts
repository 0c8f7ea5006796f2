/** "Did you mean …?": the known word nearest a mistyped one, by edit distance. */

/**
 * The Damerau–Levenshtein distance (optimal string alignment):
 * insertions, deletions, substitutions, adjacent swaps.
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate nearest `word`, if it is near enough to be what was meant: at
 * most one edit for words of up to four letters, two for longer ones; or
 * `word` is the start of exactly one candidate (`inst` → `install`). Null
 * when nothing is close, or two candidates are equally close.
 */
export function closest(word: string, candidates: readonly string[]): string | null {
  const lower = word.toLowerCase();
  const allowed = lower.length <= 4 ? 1 : 2;
  let best: string | null = null;
  let bestDistance = Infinity;
  let tied = false;
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
      tied = false;
    } else if (distance === bestDistance && candidate !== best) {
      tied = true;
    }
  }
  if (best !== null && bestDistance <= allowed && !tied) return best;
  const prefixed = lower.length >= 3 ? candidates.filter((c) => c.toLowerCase().startsWith(lower)) : [];
  return prefixed.length === 1 ? prefixed[0]! : null;
}

/** ` Did you mean 'install'?` (with a leading space), or "" when nothing is close. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const near = closest(word, candidates);
  return near === null ? "" : ` Did you mean '${near}'?`;
}
