/**
 * Which source files differ between the approved artifact and the installed
 * one (from what each was recorded as built from), and, for `tether review
 * <name> --diff`, how: a unified diff per file from the kept contents.
 */
import type { SourceEntry } from "./artifact-records.js";
import { unifiedDiff } from "./line-diff.js";

export interface SourceChange {
  readonly path: string;
  readonly change: "changed" | "added" | "removed";
  readonly before: SourceEntry | null;
  readonly after: SourceEntry | null;
}

/** The files added, removed or changed from `before` to `after`, by path. */
export function sourceChanges(before: readonly SourceEntry[], after: readonly SourceEntry[]): SourceChange[] {
  const old = new Map(before.map((s) => [s.path, s]));
  const now = new Map(after.map((s) => [s.path, s]));
  const paths = [...new Set([...old.keys(), ...now.keys()])].sort();
  return paths.flatMap((path): SourceChange[] => {
    const b = old.get(path) ?? null;
    const a = now.get(path) ?? null;
    if (b !== null && a !== null)
      return b.sha256 === a.sha256 ? [] : [{ path, change: "changed", before: b, after: a }];
    return [{ path, change: a === null ? "removed" : "added", before: b, after: a }];
  });
}

/** One file's diff for the operator: the unified diff, or why there is none. */
export interface SourceDiff {
  readonly path: string;
  readonly change: SourceChange["change"];
  /** `--- a/path` / `+++ b/path` and the hunks; null when it cannot be shown. */
  readonly unified: string | null;
  /** Why not (a file too large to keep, binary, too different), or null. */
  readonly note: string | null;
}

const BINARY = /\u0000/;

/** The diff of each change, reading kept contents with `content` (null: not kept). */
export function sourceDiffs(
  changes: readonly SourceChange[],
  content: (sha256: string) => Buffer | null,
): SourceDiff[] {
  return changes.map((c) => {
    const read = (s: SourceEntry | null): string | null | undefined => {
      if (s === null) return "";
      const bytes = content(s.sha256);
      return bytes === null ? undefined : bytes.toString("utf8");
    };
    const before = read(c.before);
    const after = read(c.after);
    const missing = [before === undefined ? c.before : null, after === undefined ? c.after : null].filter(
      (s): s is SourceEntry => s !== null,
    );
    if (missing.length > 0) {
      const what = missing
        .map((s) => `${s.bytes === null ? "" : `${s.bytes} bytes, `}sha256 ${s.sha256.slice(0, 16)}…`)
        .join(" and ");
      return {
        path: c.path,
        change: c.change,
        unified: null,
        note: `contents not kept (${what}): compare the folders themselves`,
      };
    }
    if (BINARY.test(before!) || BINARY.test(after!))
      return { path: c.path, change: c.change, unified: null, note: "binary: the hashes differ" };
    const hunks = unifiedDiff(before!, after!);
    if (hunks === null)
      return {
        path: c.path,
        change: c.change,
        unified: null,
        note: "too different to show line by line: compare the folders themselves",
      };
    const from = c.before === null ? "/dev/null" : `a/${c.path}`;
    const to = c.after === null ? "/dev/null" : `b/${c.path}`;
    return { path: c.path, change: c.change, unified: `--- ${from}\n+++ ${to}\n${hunks}`, note: null };
  });
}
