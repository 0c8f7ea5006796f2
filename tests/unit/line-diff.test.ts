/**
 * The unified diff `tether review --diff` prints: the same hunks `diff -u`
 * writes for a known case, and for random pairs of texts a diff that, applied
 * to the old text, gives the new one (fast-check, seeded).
 */
import fc from "fast-check";
import { unifiedDiff } from "../../broker/registry/line-diff.js";

/** Applies a unified diff's hunks (`@@ -a,b +c,d @@` and ` `, `-`, `+` lines) to `before`. */
function apply(before: string, diff: string): string {
  const old = before === "" ? [] : before.replace(/\n$/, "").split("\n");
  const out: string[] = [];
  let at = 0;
  for (const line of diff.split("\n")) {
    const hunk = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(line);
    if (hunk !== null) {
      const start = Number(hunk[1]) - (hunk[2] === "0" ? 0 : 1);
      while (at < start) out.push(old[at++]!);
      continue;
    }
    const op = line[0];
    const text = line.slice(1);
    if (op === " ") {
      if (old[at] !== text) throw new Error(`context '${text}' does not match line ${at + 1} '${old[at]}'`);
      out.push(text);
      at++;
    } else if (op === "-") {
      if (old[at] !== text) throw new Error(`removed '${text}' does not match line ${at + 1} '${old[at]}'`);
      at++;
    } else if (op === "+") out.push(text);
  }
  while (at < old.length) out.push(old[at++]!);
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

const numbered = (n: number) => `${Array.from({ length: n }, (_, i) => `line ${i + 1}`).join("\n")}\n`;

test("hunks as diff -u writes them: three lines of context, a count of 1 left out, far changes in separate hunks", () => {
  const before = numbered(30);
  const after = before
    .replace("line 5\n", "line five\n")
    .replace("line 20\n", "")
    .replace("line 28\n", "line 28\nnew after 28\n");
  expect(unifiedDiff(before, after)).toBe(
    [
      "@@ -2,7 +2,7 @@",
      " line 2",
      " line 3",
      " line 4",
      "-line 5",
      "+line five",
      " line 6",
      " line 7",
      " line 8",
      "@@ -17,7 +17,6 @@",
      " line 17",
      " line 18",
      " line 19",
      "-line 20",
      " line 21",
      " line 22",
      " line 23",
      "@@ -26,5 +25,6 @@",
      " line 26",
      " line 27",
      " line 28",
      "+new after 28",
      " line 29",
      " line 30",
    ].join("\n"),
  );
});

test("equal texts give no hunks; a new file and a removed one are all + or all -", () => {
  expect(unifiedDiff("a\nb\n", "a\nb\n")).toBe("");
  expect(unifiedDiff("", "a\nb\n")).toBe("@@ -0,0 +1,2 @@\n+a\n+b");
  expect(unifiedDiff("a\n", "")).toBe("@@ -1 +0,0 @@\n-a");
});

test("texts too different to diff line by line give null, not a wrong diff", () => {
  expect(unifiedDiff(numbered(50), numbered(50).replace(/line/g, "LINE"), { maxEdits: 20 })).toBeNull();
  expect(unifiedDiff(numbered(50), numbered(50).replace(/line/g, "LINE"))).not.toBeNull();
});

test("property: the diff applied to the old text gives the new one", () => {
  const text = fc
    .array(fc.constantFrom("a", "b", "c", "d", ""), { maxLength: 40 })
    .map((ls) => (ls.length === 0 ? "" : `${ls.join("\n")}\n`));
  fc.assert(
    fc.property(text, text, fc.integer({ min: 0, max: 4 }), (before, after, context) => {
      const diff = unifiedDiff(before, after, { context });
      expect(diff).not.toBeNull();
      expect(apply(before, diff!)).toBe(after);
    }),
    { seed: 0x5eed, numRuns: 500 },
  );
});
