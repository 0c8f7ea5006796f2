/** What `work` gives, or null when it throws: for a lookup whose failure means "none". */
export function orNull<T>(work: () => T): T | null {
  try {
    return work();
  } catch {
    return null;
  }
}
