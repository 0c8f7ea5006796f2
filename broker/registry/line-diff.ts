/**
 * A unified diff of two texts, line by line (Myers' O((N+M)·D) shortest edit
 * script, with the common head and tail set aside first), for
 * `tether review <name> --diff`. Texts that differ in more than `maxEdits`
 * lines are not diffed line by line: null, and the caller says so.
 */

type Op = " " | "-" | "+";

/** The shortest edit script from `a` to `b`, or null past `maxEdits`. */
function editScript(a: readonly string[], b: readonly string[], maxEdits: number): Array<[Op, string]> | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d]: v (k from -(d+1) to d+1) as it was before step d.
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return null;
  const out: Array<[Op, string]> = [];
  let x = n;
  let y = m;
  for (let d = found; d >= 0; d--) {
    const snap = trace[d]!;
    const at = (k: number) => snap[k + d + 1]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) out.push([" ", a[--x]!]), y--;
    if (d > 0) {
      if (x === prevX) out.push(["+", b[--y]!]);
      else out.push(["-", a[--x]!]);
    }
  }
  return out.reverse();
}

function lines(text: string): string[] {
  const all = text.split("\n");
  if (all.at(-1) === "") all.pop();
  return all;
}

/**
 * The unified diff (`@@ -a,b +c,d @@` hunks with `context` lines around each change), "" when
 * equal, null when too different.
 */
export function unifiedDiff(
  before: string,
  after: string,
  options: { context?: number; maxEdits?: number } = {},
): string | null {
  const context = options.context ?? 3;
  const a = lines(before);
  const b = lines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const middle = editScript(a.slice(head, a.length - tail), b.slice(head, b.length - tail), options.maxEdits ?? 2_000);
  if (middle === null) return null;
  const script: Array<[Op, string]> = [
    ...a.slice(0, head).map((l): [Op, string] => [" ", l]),
    ...middle,
    ...a.slice(a.length - tail).map((l): [Op, string] => [" ", l]),
  ];
  const out: string[] = [];
  // Walk the script; each change opens (or extends) a hunk with its context.
  let i = 0;
  let aLine = 0;
  let bLine = 0;
  while (i < script.length) {
    if (script[i]![0] === " ") {
      i++, aLine++, bLine++;
      continue;
    }
    const start = Math.max(0, i - context);
    let end = i;
    // Extend while the next change is within 2 × context unchanged lines.
    for (let j = i, quiet = 0; j < script.length; j++) {
      if (script[j]![0] === " ") {
        if (++quiet > 2 * context) break;
      } else {
        quiet = 0;
        end = j;
      }
    }
    const stop = Math.min(script.length, end + context + 1);
    const lead = i - start;
    const body = script.slice(start, stop);
    const aCount = body.filter(([op]) => op !== "+").length;
    const bCount = body.filter(([op]) => op !== "-").length;
    // As diff -u writes them: a count of 1 is left out.
    const range = (at: number, count: number) => `${at - lead + (count > 0 ? 1 : 0)}${count === 1 ? "" : `,${count}`}`;
    out.push(`@@ -${range(aLine, aCount)} +${range(bLine, bCount)} @@`);
    for (const [op, line] of body) out.push(`${op}${line}`);
    aLine += body.slice(lead).filter(([op]) => op !== "+").length;
    bLine += body.slice(lead).filter(([op]) => op !== "-").length;
    i = stop;
  }
  return out.join("\n");
}
