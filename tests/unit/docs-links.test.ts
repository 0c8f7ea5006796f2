/**
 * The docs stand alone: every relative link in docs/*.md and README.md resolves
 * to a file in the repository (and its #anchor to a heading there), no link
 * leaves the repository, every backticked repository path (`broker/x/y.ts`)
 * exists, and no doc cites notes that are not in the repository.
 *
 * A failure names the doc, the line and what is missing: when files move, fix
 * the doc (or this list of top-level folders) in the same change.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Top-level folders whose paths the docs name in backticks; a path starting elsewhere is not checked. */
const REPO_FOLDERS = [
  "broker",
  "jail-runtime",
  "manifests",
  "examples",
  "tests",
  "bench",
  "docs",
  "bin",
  "drizzle",
  "packages",
];

const DOCS = [
  "README.md",
  ...readdirSync(join(REPO, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];

interface Line {
  readonly doc: string;
  readonly line: number;
  readonly text: string;
}

/** The doc's lines outside fenced code blocks, numbered from 1. */
function prose(doc: string): Line[] {
  const lines: Line[] = [];
  let fenced = false;
  readFileSync(join(REPO, doc), "utf8")
    .split("\n")
    .forEach((text, i) => {
      if (/^\s*(```|~~~)/.test(text)) {
        fenced = !fenced;
        return;
      }
      if (!fenced) lines.push({ doc, line: i + 1, text });
    });
  return lines;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(doc: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of prose(doc)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading === null) continue;
    const base = heading[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(doc: string): Set<string> {
  let found = anchorCache.get(doc);
  if (found === undefined) {
    found = anchors(doc);
    anchorCache.set(doc, found);
  }
  return found;
}

/** Inline code spans, without the backticks. */
function codeSpans(text: string): string[] {
  return [...text.matchAll(/(`+)(.+?)\1/g)].map((m) => m[2]!.trim());
}

/** Markdown link targets on a line (inline code removed first: `a](b)` in code is no link). */
function linkTargets(text: string): string[] {
  const withoutCode = text.replace(/(`+).+?\1/g, "");
  return [...withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

function problemsWithLink(at: Line, target: string): string[] {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return []; // https:, mailto: … — not a repository file
  const where = `${at.doc}:${at.line}`;
  const [path = "", anchor] = target.split("#", 2) as [string, string | undefined];
  if (path.startsWith("/")) return [`${where}: link "${target}" is absolute; link relative to the doc`];
  const file = path === "" ? join(REPO, at.doc) : resolve(REPO, dirname(at.doc), decodeURIComponent(path));
  const inRepo = relative(REPO, file);
  if (inRepo.startsWith(`..${sep}`) || inRepo === "..") return [`${where}: link "${target}" leaves the repository`];
  if (!existsSync(file)) return [`${where}: link "${target}": ${inRepo} does not exist`];
  if (anchor !== undefined && anchor !== "") {
    if (!file.endsWith(".md") || statSync(file).isDirectory()) return [];
    if (!anchorsOf(inRepo).has(anchor.toLowerCase())) {
      return [`${where}: link "${target}": ${inRepo} has no heading with the anchor #${anchor}`];
    }
  }
  return [];
}

/** A backticked span that names a file or folder in the repository, e.g. `broker/caps/pipeline.ts`. */
function repoPath(span: string): string | null {
  const m = /^([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.@-]+)*\/?)(?::\d+(?:-\d+)?)?$/.exec(span);
  if (m === null) return null;
  const path = m[1]!;
  const top = path.split("/")[0]!;
  if (!path.includes("/") || !REPO_FOLDERS.includes(top)) return null;
  return path;
}

function problemsWithPath(at: Line, span: string): string[] {
  const path = repoPath(span);
  if (path === null) return [];
  return existsSync(join(REPO, path)) ? [] : [`${at.doc}:${at.line}: \`${path}\` does not exist in the repository`];
}

/** What the docs once cited instead of saying: notes that are not in the repository. */
const OUTSIDE =
  /\.\.\/shared|\bDESIGN\.md\b|\bSTYLE\.md\b|\bclaude-hooks\.md\b|design notes|research notes|\bthe seed\b|\bseeds?\//i;

test.each(DOCS)("%s: relative links resolve inside the repository", (doc) => {
  const problems = prose(doc).flatMap((at) => linkTargets(at.text).flatMap((target) => problemsWithLink(at, target)));
  expect(problems).toEqual([]);
});

test.each(DOCS)("%s: backticked repository paths exist", (doc) => {
  const problems = prose(doc).flatMap((at) => codeSpans(at.text).flatMap((span) => problemsWithPath(at, span)));
  expect(problems).toEqual([]);
});

test.each(DOCS)("%s: cites nothing outside the repository", (doc) => {
  const problems = readFileSync(join(REPO, doc), "utf8")
    .split("\n")
    .flatMap((text, i) =>
      OUTSIDE.test(text) ? [`${doc}:${i + 1}: cites something outside the repository: ${text.trim()}`] : [],
    );
  expect(problems).toEqual([]);
});

test("the checks themselves: anchors, links and paths", () => {
  expect(anchorsOf("docs/hooks.md").has("command-hooks-the-built-in-hooks-extension")).toBe(true);
  const at = { doc: "docs/hooks.md", line: 1, text: "" };
  expect(problemsWithLink(at, "operators.md")).toEqual([]);
  expect(problemsWithLink(at, "https://example.org/x")).toEqual([]);
  expect(problemsWithLink(at, "../../shared/notes.md")[0]).toMatch(/^docs\/hooks\.md:1: .*leaves the repository/);
  expect(problemsWithLink(at, "nope.md")[0]).toMatch(/docs\/nope\.md does not exist/);
  expect(problemsWithLink(at, "#no-such-heading")[0]).toMatch(/no heading with the anchor #no-such-heading/);
  expect(problemsWithPath(at, "broker/hooks/compose.ts")).toEqual([]);
  expect(problemsWithPath(at, "broker/egress/fetch.ts")).toEqual([
    "docs/hooks.md:1: `broker/egress/fetch.ts` does not exist in the repository",
  ]);
  expect(problemsWithPath(at, "pipeline.ts")).toEqual([]); // no folder: not checked
  expect(linkTargets("see [a](b.md#c) and `[x](y)`")).toEqual(["b.md#c"]);
});
