/**
 * Test support: the steps of a walkthrough written in Markdown (docs/authors.md
 * between `<!-- walkthrough -->` and `<!-- /walkthrough -->`), so a test can do
 * exactly what the page shows and compare what each command printed with the
 * output the page shows.
 *
 * - a ```` ```console ```` block: `$ command` lines, each followed by the output
 *   it prints; a block that starts without `$` is more output of the command
 *   still running (a watch); a `^C` line interrupts it, and the lines after it
 *   are what it prints as it stops;
 * - a fence with `title="path"` (```` ```ts title="index.ts" ````) writes that
 *   whole file; a ```` ```diff title="path" ```` block changes one place of
 *   it: the lines marked ` ` and `-` are replaced by those marked ` ` and `+`.
 *
 * In expected output a line `⋮` stands for any number of lines.
 */

export type Step =
  | { readonly kind: "run"; readonly command: string; readonly expected: readonly string[] }
  | { readonly kind: "more"; readonly expected: readonly string[] }
  | { readonly kind: "interrupt"; readonly expected: readonly string[] }
  | { readonly kind: "write"; readonly path: string; readonly text: string }
  | { readonly kind: "patch"; readonly path: string; readonly before: string; readonly after: string };

/** Stands for any number of lines in expected output. */
export const ELIDED = "⋮";

const OPEN = "<!-- walkthrough";
const CLOSE = "<!-- /walkthrough -->";

/** The walkthrough's steps, in the page's order; throws if the page has none. */
export function walkthroughSteps(markdown: string): Step[] {
  const start = markdown.indexOf(OPEN);
  const end = markdown.indexOf(CLOSE);
  if (start < 0 || end < start) throw new Error(`no ${OPEN} … ${CLOSE} region in the page`);
  const lines = markdown.slice(start, end).split("\n");
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)(?:\s+title="([^"]+)")?\s*$/.exec(lines[i]!);
    if (fence === null) continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    const [, lang, title] = fence;
    if (lang === "console") steps.push(...consoleSteps(body));
    else if (title !== undefined && lang === "diff") steps.push(patchStep(title, body));
    else if (title !== undefined) steps.push({ kind: "write", path: title, text: `${body.join("\n")}\n` });
  }
  return steps;
}

function consoleSteps(body: readonly string[]): Step[] {
  const steps: Array<
    { kind: "run"; command: string; expected: string[] } | { kind: "more" | "interrupt"; expected: string[] }
  > = [];
  for (const line of body) {
    if (line.startsWith("$ ")) steps.push({ kind: "run", command: line.slice(2), expected: [] });
    else if (line === "^C") steps.push({ kind: "interrupt", expected: [] });
    else if (steps.length === 0) steps.push({ kind: "more", expected: [line] });
    else steps[steps.length - 1]!.expected.push(line);
  }
  return steps;
}

function patchStep(path: string, body: readonly string[]): Step {
  const before: string[] = [];
  const after: string[] = [];
  for (const line of body) {
    const mark = line[0] ?? " ";
    const text = line.slice(1);
    if (mark === " " || mark === "-") before.push(text);
    if (mark === " " || mark === "+") after.push(text);
    if (mark !== " " && mark !== "-" && mark !== "+")
      throw new Error(`diff for ${path}: a line must start with ' ', '-' or '+': ${JSON.stringify(line)}`);
  }
  return { kind: "patch", path, before: before.join("\n"), after: after.join("\n") };
}

/** `text` with the patch applied at its one place; throws if the `before` lines are not there exactly once. */
export function applyPatch(text: string, step: { path: string; before: string; after: string }): string {
  const at = text.indexOf(step.before);
  if (at < 0 || text.indexOf(step.before, at + 1) >= 0) {
    throw new Error(
      `diff for ${step.path}: its context must occur exactly once in the file; looked for:\n${step.before}\nin:\n${text}`,
    );
  }
  return text.slice(0, at) + step.after + text.slice(at + step.before.length);
}

/**
 * Where `expected` (with `⋮` lines) matches a prefix of `actual`: the index
 * just past the last line it names, or -1. With `whole`, it must match all of
 * `actual` (a trailing `⋮` takes the rest).
 */
export function matchLines(expected: readonly string[], actual: readonly string[], whole: boolean): number {
  const go = (e: number, a: number): number => {
    if (e === expected.length) return !whole || a === actual.length ? a : -1;
    if (expected[e] === ELIDED) {
      if (e === expected.length - 1) return whole ? actual.length : a;
      for (let skip = a; skip <= actual.length; skip++) {
        const end = go(e + 1, skip);
        if (end >= 0) return end;
      }
      return -1;
    }
    return a < actual.length && actual[a] === expected[e] ? go(e + 1, a + 1) : -1;
  };
  return go(0, 0);
}

/**
 * What may differ between two runs of the same steps, made the same on both
 * sides: times (`812 ms`, `5.4 s`, `(18ms)`, `794µs`) and artifact sizes
 * (`159 KiB`), which change with the machine and the SDK's own code; and the
 * folder standing for the machine's root (`root`), which the page leaves out.
 */
export function normalise(line: string, root = ""): string {
  return (root === "" ? line : line.split(root).join(""))
    .replace(/\d+(?:\.\d+)?\s?(?:ms|µs|s)\b/g, "<time>")
    .replace(/\d+ KiB\b/g, "<size> KiB")
    .trimEnd();
}
