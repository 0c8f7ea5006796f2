/**
 * Where a line of an artifact came from, so a module that throws while loading
 * is reported at its own file and line, not at the artifact's (which is all the
 * stack Deno prints names). esbuild marks the start of each bundled module with
 * a comment naming its path relative to the extension folder (`// lib.ts`); the
 * line's code, looked up in that file, gives its line there when it appears
 * exactly once (esbuild strips types and may respace, so not always).
 */
import { readFileSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";

export interface SourcePlace {
  /** The module's path in the extension folder, or how the SDK's or the generated entry's is named. */
  readonly file: string;
  /** The line and column in that file, when the code was found there once. */
  readonly line?: number;
  readonly column?: number;
  /** The artifact's line, trimmed. */
  readonly code: string;
}

const MARKER = /^\/\/ (\S.*)$/;

/**
 * The place in `root`'s sources of the artifact `code`'s
 * `line`:`column` (1-based), or null when no module marker precedes it.
 */
export function placeOf(code: string, line: number, column: number, root: string): SourcePlace | null {
  const lines = code.split("\n");
  const text = lines[line - 1];
  if (text === undefined) return null;
  let marker: string | undefined;
  for (let i = line - 1; i >= 0 && marker === undefined; i--) marker = MARKER.exec(lines[i] ?? "")?.[1];
  if (marker === undefined) return null;
  const trimmed = text.trim();
  if (marker.startsWith("tether-entry:")) return { file: "the generated entry", code: trimmed };
  const path = resolve(root, marker);
  const rel = relative(root, path);
  if (rel.startsWith("..") || isAbsolute(rel))
    return { file: `the SDK (${marker.replace(/^.*?jail-runtime\//, "")})`, code: trimmed };
  let source: string[];
  try {
    source = readFileSync(path, "utf8").split("\n");
  } catch {
    return { file: rel, code: trimmed };
  }
  const wanted = withoutDeclaration(trimmed);
  const found = source.flatMap((s, i) =>
    wanted.rest !== "" && withoutDeclaration(s.trim()).rest === wanted.rest ? [i] : [],
  );
  if (found.length !== 1) return { file: rel, code: trimmed };
  const at = found[0]!;
  const line0 = source[at]!;
  const indent = (s: string) => s.length - s.trimStart().length;
  const shift = withoutDeclaration(line0.trim()).keyword.length - wanted.keyword.length;
  return { file: rel, line: at + 1, column: Math.max(1, column - indent(text) + indent(line0) + shift), code: trimmed };
}

/** esbuild writes a top-level `const`/`let` (exported or not) as `var`: compare lines without the keyword. */
function withoutDeclaration(line: string): { keyword: string; rest: string } {
  const keyword = /^(?:export\s+)?(?:const|let|var)\s+/.exec(line)?.[0] ?? "";
  return { keyword, rest: line.slice(keyword.length) };
}

/** `file:line:column`, or `file` with the code when the line is not known. */
export function formatPlace(place: SourcePlace): string {
  return place.line !== undefined
    ? `${place.file}:${place.line}:${place.column}`
    : `${place.file} (at \`${place.code.slice(0, 120)}\`)`;
}

/**
 * Rewrites every `<artifact>:line:column` in `text` (a stack Deno printed), for
 * each of the names the artifact had (`file:///opt/tether/satellite.js` in the
 * jail), to the place in the sources.
 */
export function rewritePlaces(text: string, names: readonly string[], code: string, root: string): string {
  let out = text;
  for (const name of names) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    out = out.replace(new RegExp(`(?:file://)?${escaped}:(\\d+):(\\d+)`, "g"), (whole, l: string, c: string) => {
      const place = placeOf(code, Number(l), Number(c), root);
      return place === null ? whole : formatPlace(place);
    });
  }
  return out;
}
