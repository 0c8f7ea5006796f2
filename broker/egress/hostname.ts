/**
 * Host names for the egress judge: one normal form shared by rules and URLs,
 * and a check that a rule's host pattern does not cover a whole public suffix.
 *
 * Normal form (`normaliseHost`): what the WHATWG URL parser makes of a host
 * (UTS #46 mapping, lowercase, IDN to A-labels), then one trailing dot dropped.
 * It is the form `new URL(...).hostname` has, so a rule and a request compare
 * as plain strings. Refused (throws `InvalidHostError`):
 * - empty names and empty labels (`a..b`, `.a`, `a..` — one trailing dot only),
 * - labels over 63 and names over 253 octets (after conversion),
 * - anything left that is not a lowercase letter, digit, `-` or `_`,
 * - invalid IDNs (bad punycode, disallowed code points),
 * - names the URL parser reads as IPv4 (the last label is a number: `127.1`,
 *   `example.123`, `0x7f`) — IP literals go through `parseIpLiteral`.
 *
 * Decisions: `_` is allowed (real hosts carry it — legacy S3 bucket hosts,
 * service names — and the URL parser and resolvers accept it; it has no
 * meaning to the matcher). A `-` at either end of a label is allowed too, as
 * the URL parser allows it. ASCII outside letters, digits, `.`, `-`, `_` is
 * refused *before* IDN conversion: `domainToASCII` silently truncates at `/`,
 * `?`, `#`, `\` (`a/b` → `a`) and drops tab and newline.
 *
 * Too broad (`isTooBroad`): `*`; `*.X` when X is one label (a whole TLD,
 * listed or not: `*.com`, `*.internal`), when X is a public suffix in the
 * Public Suffix List (ICANN or private section: `*.co.uk`, `*.github.io`), or
 * when a listed suffix lies below X (`*.amazonaws.com` covers
 * `s3.amazonaws.com`, where anyone may own a bucket); a bare name that is a
 * listed public suffix (`com`, `co.uk`, `github.io`). The list is tldts's.
 */
import type { parse as TldtsParse } from "tldts";
import { createRequire, domainToASCII } from "./node-builtins.js";

/** A host name or host pattern that is malformed. */
export class InvalidHostError extends Error {
  override readonly name = "InvalidHostError";
}

const MAX_NAME = 253;
const MAX_LABEL = 63;
const LABEL = /^[a-z0-9_-]+$/;
const ASCII_OK = /^[A-Za-z0-9._-]$/;

function fail(host: string, why: string): never {
  throw new InvalidHostError(`${JSON.stringify(host)} is not a valid host name: ${why}`);
}

/** The WHATWG "ends in a number checker" (after one trailing empty label is dropped). */
function endsInANumber(name: string): boolean {
  const last = name.slice(name.lastIndexOf(".") + 1);
  if (/^[0-9]+$/.test(last)) return true;
  return /^0x[0-9a-f]*$/.test(last);
}

/**
 * The normal form of a host name (see the module comment). Throws
 * `InvalidHostError` when `host` is not a valid name.
 */
export function normaliseHost(host: string): string {
  if (typeof host !== "string") throw new InvalidHostError("the host name is not a string");
  if (host === "") fail(host, "it is empty");
  if (host.length > 4 * MAX_NAME) fail(host, "it is too long");
  for (const ch of host) {
    if (ch.charCodeAt(0) < 0x80 && !ASCII_OK.test(ch)) fail(host, `it contains ${JSON.stringify(ch)}`);
  }
  const ascii = domainToASCII(host);
  if (ascii === "") fail(host, "it is not a valid domain name (IDNA)");
  const name = ascii.endsWith(".") ? ascii.slice(0, -1) : ascii;
  if (name === "") fail(host, "it has no labels");
  if (name.length > MAX_NAME) fail(host, `it is longer than ${MAX_NAME} characters`);
  for (const label of name.split(".")) {
    if (label === "") fail(host, "it has an empty label");
    if (label.length > MAX_LABEL) fail(host, `a label is longer than ${MAX_LABEL} characters`);
    if (!LABEL.test(label)) fail(host, `the label ${JSON.stringify(label)} holds characters other than a-z 0-9 - _`);
  }
  if (endsInANumber(name)) fail(host, "it ends in a number, so it is an IPv4 address, not a name");
  return name;
}

// ---------------------------------------------------------------------------
// The public suffix list, as tldts ships it
// ---------------------------------------------------------------------------

/**
 * tldts's flat suffix trie. Its public API answers "what is the suffix of this
 * name" but not "is there a suffix below this name", so the trie itself is
 * read (tldts is pinned; the shape is checked here and by the unit tests).
 * Nodes own the edges `edgeStart[n] .. edgeStart[n + 1]`; an edge's label is
 * the next `edgeLength[e]` characters of `labelText`; `nodeFlags` bit 1 marks
 * an ICANN rule and bit 2 a private one ending at that node; `*` is a wildcard.
 */
interface SuffixTrie {
  nodeFlags: Uint8Array;
  edgeStart: Uint16Array | Uint32Array;
  edgeLength: Uint8Array;
  edgeChild: Uint16Array | Uint32Array;
  labelText: string;
  rulesRoot: number;
}

function loadTrie(): { trie: SuffixTrie; edgeOffset: Uint32Array } {
  const require = createRequire(import.meta.url);
  const trie = require("tldts/dist/cjs/src/data/trie.js") as Partial<SuffixTrie>;
  const { nodeFlags, edgeStart, edgeLength, edgeChild, labelText, rulesRoot } = trie;
  if (
    !(nodeFlags instanceof Uint8Array) ||
    !(edgeStart instanceof Uint16Array || edgeStart instanceof Uint32Array) ||
    !(edgeLength instanceof Uint8Array) ||
    !(edgeChild instanceof Uint16Array || edgeChild instanceof Uint32Array) ||
    typeof labelText !== "string" ||
    typeof rulesRoot !== "number" ||
    edgeStart.length !== nodeFlags.length + 1 ||
    edgeChild.length !== edgeLength.length
  ) {
    throw new Error(
      "tldts's suffix trie does not have the expected shape " +
        "(tldts upgraded?): broker/egress/hostname.ts must be updated",
    );
  }
  const edgeOffset = new Uint32Array(edgeLength.length);
  let offset = 0;
  for (let edge = 0; edge < edgeLength.length; edge += 1) {
    edgeOffset[edge] = offset;
    offset += edgeLength[edge]!;
  }
  if (offset !== labelText.length) throw new Error("tldts's suffix trie labels do not add up (tldts upgraded?)");
  return { trie: { nodeFlags, edgeStart, edgeLength, edgeChild, labelText, rulesRoot }, edgeOffset };
}

/**
 * The list and tldts are loaded at their first use, not with this module: only a rule's
 * check needs them, and every broker loads this module (~25 ms of a command's start).
 */
let loaded: { trie: SuffixTrie; edgeOffset: Uint32Array } | null = null;
const suffixTrie = () => (loaded ??= loadTrie());
let tldtsParse: typeof TldtsParse | null = null;
function parseDomain(...args: Parameters<typeof TldtsParse>): ReturnType<typeof TldtsParse> {
  tldtsParse ??= (createRequire(import.meta.url)("tldts") as { parse: typeof TldtsParse }).parse;
  return tldtsParse(...args);
}
const RULE_FLAGS = 1 | 2;

function edgeLabel(trie: SuffixTrie, edgeOffset: Uint32Array, edge: number): string {
  const start = edgeOffset[edge]!;
  return trie.labelText.slice(start, start + trie.edgeLength[edge]!);
}

function* edgesOf(trie: SuffixTrie, node: number): Generator<number> {
  for (let edge = trie.edgeStart[node]!; edge < trie.edgeStart[node + 1]!; edge += 1) yield edge;
}

/** Labels of the trie are mostly A-labels, but some IDN rules are stored as U-labels. */
function sameLabel(trieLabel: string, label: string): boolean {
  if (trieLabel === label) return true;
  return !/^[\x00-\x7f]*$/.test(trieLabel) && domainToASCII(trieLabel) === label;
}

/**
 * A listed public suffix strictly below `name` (as a name, `*` for a wildcard
 * label), or null. Follows both the exact and the wildcard edge at each step.
 */
export function suffixBelow(name: string): string | null {
  const { trie, edgeOffset } = suffixTrie();
  let nodes = [trie.rulesRoot];
  for (const label of name.split(".").reverse()) {
    const next: number[] = [];
    for (const node of nodes) {
      for (const edge of edgesOf(trie, node)) {
        const text = edgeLabel(trie, edgeOffset, edge);
        if (text === "*" || sameLabel(text, label)) next.push(trie.edgeChild[edge]!);
      }
    }
    if (next.length === 0) return null;
    nodes = next;
  }
  // Breadth first, so the reason names the nearest suffix.
  let frontier = nodes.map((node) => ({ node, labels: [] as string[] }));
  const seen = new Set<number>();
  while (frontier.length > 0) {
    const deeper: typeof frontier = [];
    for (const { node, labels } of frontier) {
      for (const edge of edgesOf(trie, node)) {
        const child = trie.edgeChild[edge]!;
        const text = edgeLabel(trie, edgeOffset, edge);
        const path = [text, ...labels];
        if ((trie.nodeFlags[child]! & RULE_FLAGS) !== 0) {
          const label = /^[\x00-\x7f]*$/.test(text) ? text : domainToASCII(text) || text;
          return [label, ...labels, name].join(".");
        }
        if (!seen.has(child)) {
          seen.add(child);
          deeper.push({ node: child, labels: path });
        }
      }
    }
    frontier = deeper;
  }
  return null;
}

/** Is `name` (normalised) itself a public suffix listed by the PSL (ICANN or private)? */
export function isListedSuffix(name: string): boolean {
  const result = parseDomain(name, {
    allowPrivateDomains: true,
    validateHostname: false,
    detectIp: false,
    extractHostname: false,
  });
  return result.publicSuffix === name && (result.isIcann === true || result.isPrivate === true);
}

/**
 * Why a rule's host pattern is too broad, or null when it is fine. A pattern
 * is `*`, `*.name` or `name`; anything else throws `InvalidHostError`.
 */
export function isTooBroad(pattern: string): string | null {
  if (typeof pattern !== "string") throw new InvalidHostError("the host pattern is not a string");
  if (pattern === "*" || pattern === "*.") return `'${pattern}' matches every host`;
  const wildcard = pattern.startsWith("*.");
  const rest = wildcard ? pattern.slice(2) : pattern;
  if (rest.includes("*")) {
    throw new InvalidHostError(
      `${JSON.stringify(pattern)} is not a host pattern: '*' is ` +
        `only allowed as a whole leftmost label ('*.example.com')`,
    );
  }
  const name = normaliseHost(rest);
  if (!wildcard) {
    return isListedSuffix(name)
      ? `'${name}' is a public suffix (a registry such as a TLD or a shared hosting domain), not a host`
      : null;
  }
  if (!name.includes(".")) return `'*.${name}' matches every name under the top-level domain '${name}'`;
  if (isListedSuffix(name))
    return `'*.${name}' matches every name under the public suffix '${name}', where anyone may register`;
  const below = suffixBelow(name);
  if (below !== null) return `'*.${name}' covers the public suffix '${below}', where anyone may register`;
  return null;
}
