/**
 * Registry order (broker/sessions/order.ts): dependency order, then priority,
 * then name; missing and cyclic requirements make an extension — and everything
 * that requires it — inactive with the chain that leads to the problem.
 */
import fc from "fast-check";
import { describeProblem, registryOrder, type OrderInput, type OrderProblem } from "../../broker/sessions/order.js";

const ext = (name: string, requires: string[] = [], priority = 0): OrderInput => ({ name, requires, priority });

/** The problems as a plain object, for readable comparisons. */
const problems = (inactive: Map<string, OrderProblem>): Record<string, OrderProblem> => Object.fromEntries(inactive);

describe("registryOrder(): ordering", () => {
  test("a linear chain runs requirements first, whatever the priorities and input order", () => {
    const { order, inactive } = registryOrder([ext("c", ["b"], -10), ext("b", ["a"], -5), ext("a", [], 10)]);
    expect(order).toEqual(["a", "b", "c"]);
    expect(inactive.size).toBe(0);
  });

  test("a diamond places the shared base first and the top last", () => {
    const input = [ext("app", ["left", "right"]), ext("left", ["base"]), ext("right", ["base"]), ext("base")];
    expect(registryOrder(input).order).toEqual(["base", "left", "right", "app"]);
  });

  test("in a diamond, priority decides between the two sides", () => {
    const input = [
      ext("app", ["left", "right"]),
      ext("left", ["base"]),
      ext("right", ["base"], -1),
      ext("base", [], 3),
    ];
    expect(registryOrder(input).order).toEqual(["base", "right", "left", "app"]);
  });

  test("ties are broken by priority (lower first), then by name", () => {
    const input = [ext("x", [], 1), ext("a", [], 1), ext("m"), ext("b", [], -1), ext("c")];
    expect(registryOrder(input).order).toEqual(["b", "c", "m", "a", "x"]);
  });

  test("at every step the smallest (priority, name) among the ready ones goes next", () => {
    // a (priority 5) holds b back; once a is placed, b (0) goes before d (3).
    const input = [ext("b", ["a"]), ext("a", [], 5), ext("c"), ext("d", [], 3)];
    expect(registryOrder(input).order).toEqual(["c", "d", "a", "b"]);
    const input2 = [ext("b", ["a"]), ext("a", [], 5), ext("c"), ext("d", [], 6)];
    expect(registryOrder(input2).order).toEqual(["c", "a", "b", "d"]);
  });

  test("names compare by code point, not by locale or UTF-16 code unit", () => {
    // Code points: "B" (66) < "a" (97); U+FFFF < U+10000, though "\u{10000}" < "\uFFFF" in UTF-16 units.
    expect(registryOrder([ext("a"), ext("B")]).order).toEqual(["B", "a"]);
    expect(registryOrder([ext("\u{10000}"), ext("\uFFFF")]).order).toEqual(["\uFFFF", "\u{10000}"]);
    expect(registryOrder([ext("ab"), ext("a")]).order).toEqual(["a", "ab"]);
  });

  test("a requirement listed twice counts once", () => {
    expect(registryOrder([ext("b", ["a", "a"]), ext("a")])).toEqual({ order: ["a", "b"], inactive: new Map() });
  });

  test("an empty input gives an empty order", () => {
    expect(registryOrder([])).toEqual({ order: [], inactive: new Map() });
  });

  test("a duplicate name is a programming error", () => {
    expect(() => registryOrder([ext("a"), ext("b"), ext("a", [], 1)])).toThrow(/'a' is given twice/);
  });

  test("a NaN priority is a programming error", () => {
    expect(() => registryOrder([ext("a", [], Number.NaN)])).toThrow(/priority of 'a' is NaN/);
  });
});

describe("registryOrder(): inactive extensions", () => {
  test("a missing requirement makes its requirer and everything above it inactive, with chains", () => {
    const { order, inactive } = registryOrder([
      ext("app", ["lib"]),
      ext("lib", ["missing-dep"]),
      ext("top", ["app"]),
      ext("other"),
      ext("user", ["other"]),
    ]);
    expect(order).toEqual(["other", "user"]);
    expect(problems(inactive)).toEqual({
      lib: { kind: "missing", extension: "lib", chain: ["lib", "missing-dep"], missing: "missing-dep" },
      app: { kind: "missing", extension: "lib", chain: ["app", "lib", "missing-dep"], missing: "missing-dep" },
      top: { kind: "missing", extension: "lib", chain: ["top", "app", "lib", "missing-dep"], missing: "missing-dep" },
    });
  });

  test("an extension that requires itself is a cycle of length 1", () => {
    const { order, inactive } = registryOrder([ext("a", ["a"]), ext("b")]);
    expect(order).toEqual(["b"]);
    expect(problems(inactive)).toEqual({ a: { kind: "cycle", chain: ["a", "a"] } });
  });

  test("a cycle of length 2 makes both inactive, each chain starting at itself", () => {
    const { order, inactive } = registryOrder([ext("a", ["b"]), ext("b", ["a"]), ext("c")]);
    expect(order).toEqual(["c"]);
    expect(problems(inactive)).toEqual({
      a: { kind: "cycle", chain: ["a", "b", "a"] },
      b: { kind: "cycle", chain: ["b", "a", "b"] },
    });
  });

  test("a cycle of length 3", () => {
    const { order, inactive } = registryOrder([ext("c", ["a"]), ext("b", ["c"]), ext("a", ["b"])]);
    expect(order).toEqual([]);
    expect(problems(inactive)).toEqual({
      a: { kind: "cycle", chain: ["a", "b", "c", "a"] },
      b: { kind: "cycle", chain: ["b", "c", "a", "b"] },
      c: { kind: "cycle", chain: ["c", "a", "b", "c"] },
    });
  });

  test("an extension on several cycles reports its shortest", () => {
    // a → b → c → a and a → d → a.
    const { inactive } = registryOrder([ext("a", ["b", "d"]), ext("b", ["c"]), ext("c", ["a"]), ext("d", ["a"])]);
    expect(inactive.get("a")).toEqual({ kind: "cycle", chain: ["a", "d", "a"] });
    expect(inactive.get("c")).toEqual({ kind: "cycle", chain: ["c", "a", "b", "c"] });
  });

  test("an extension that depends on a cycle is inactive with the chain into it", () => {
    const { order, inactive } = registryOrder([
      ext("app", ["a"]),
      ext("a", ["b"]),
      ext("b", ["a"]),
      ext("top", ["app"]),
      ext("free"),
    ]);
    expect(order).toEqual(["free"]);
    expect(inactive.get("app")).toEqual({ kind: "cycle", chain: ["app", "a", "b", "a"] });
    expect(inactive.get("top")).toEqual({ kind: "cycle", chain: ["top", "app", "a", "b", "a"] });
  });

  test("being on a cycle wins over a missing requirement", () => {
    const { inactive } = registryOrder([ext("a", ["b", "gone"]), ext("b", ["a"])]);
    expect(inactive.get("a")).toEqual({ kind: "cycle", chain: ["a", "b", "a"] });
  });

  test("of several problems the shortest chain wins, then the requirement first in name order", () => {
    const base = [ext("deep", ["mid"]), ext("mid", ["gone"]), ext("zed", ["gone2"])];
    expect(registryOrder([...base, ext("app", ["deep", "zed"])]).inactive.get("app")).toEqual({
      kind: "missing",
      extension: "zed",
      chain: ["app", "zed", "gone2"],
      missing: "gone2",
    });
    expect(registryOrder([...base, ext("app", ["deep", "zed", "absent"])]).inactive.get("app")).toEqual({
      kind: "missing",
      extension: "app",
      chain: ["app", "absent"],
      missing: "absent",
    });
    const tie = [ext("app", ["c", "b"]), ext("b", ["x"]), ext("c", ["y"])];
    expect(registryOrder(tie).inactive.get("app")).toEqual({
      kind: "missing",
      extension: "b",
      chain: ["app", "b", "x"],
      missing: "x",
    });
    expect(registryOrder([ext("app", ["zz", "yy"])]).inactive.get("app")).toEqual({
      kind: "missing",
      extension: "app",
      chain: ["app", "yy"],
      missing: "yy",
    });
  });

  test("unrelated extensions keep exactly the order they would have alone", () => {
    const healthy = [ext("log", [], 2), ext("auth", ["log"]), ext("ui", ["auth"], -1), ext("zz", [], -3)];
    const broken = [
      ext("app", ["lib"]),
      ext("lib", ["gone"]),
      ext("p", ["q"]),
      ext("q", ["p"]),
      ext("r", ["p", "log"]),
    ];
    const { order, inactive } = registryOrder([...broken, ...healthy]);
    expect(order).toEqual(registryOrder(healthy).order);
    expect(order).toEqual(["zz", "log", "auth", "ui"]);
    expect([...inactive.keys()].sort()).toEqual(["app", "lib", "p", "q", "r"]);
  });
});

describe("describeProblem()", () => {
  test.each<[OrderProblem, string]>([
    [
      { kind: "missing", extension: "lib", chain: ["app", "lib", "missing-dep"], missing: "missing-dep" },
      "requires 'missing-dep', which is not installed (app → lib → missing-dep)",
    ],
    [
      { kind: "missing", extension: "lib", chain: ["lib", "missing-dep"], missing: "missing-dep" },
      "requires 'missing-dep', which is not installed (lib → missing-dep)",
    ],
    [{ kind: "cycle", chain: ["a", "b", "c", "a"] }, "is part of a requirement cycle (a → b → c → a)"],
    [{ kind: "cycle", chain: ["a", "a"] }, "is part of a requirement cycle (a → a)"],
    [{ kind: "cycle", chain: ["app", "a", "b", "a"] }, "depends on a requirement cycle (app → a → b → a)"],
  ])("%j", (problem, sentence) => {
    expect(describeProblem(problem)).toBe(sentence);
  });

  test("describes what registryOrder() reports", () => {
    const { inactive } = registryOrder([
      ext("app", ["lib"]),
      ext("lib", ["missing-dep"]),
      ext("x", ["y"]),
      ext("y", ["x"]),
      ext("w", ["x"]),
    ]);
    const sentences = Object.fromEntries([...inactive].map(([name, p]) => [name, `${name} ${describeProblem(p)}`]));
    expect(sentences).toEqual({
      app: "app requires 'missing-dep', which is not installed (app → lib → missing-dep)",
      lib: "lib requires 'missing-dep', which is not installed (lib → missing-dep)",
      x: "x is part of a requirement cycle (x → y → x)",
      y: "y is part of a requirement cycle (y → x → y)",
      w: "w depends on a requirement cycle (w → x → y → x)",
    });
  });
});

// ---------------------------------------------------------------------------
// Properties over random DAGs plus random extra edges (cycles, missing names).

interface Graph {
  exts: OrderInput[];
  /** Names that are required somewhere but not installed. */
  absent: string[];
}

/**
 * A random DAG over the installed names (edges only to earlier ones), requirements
 * of absent names, and a few arbitrary extra edges that may close cycles.
 */
const graphs: fc.Arbitrary<Graph> = fc
  .uniqueArray(fc.stringMatching(/^[a-e][a-e0-9]{0,2}$/), { minLength: 1, maxLength: 14 })
  .chain((all) => {
    const n = all.length;
    return fc
      .record({
        absent: fc.integer({ min: 0, max: Math.min(2, n - 1) }),
        priorities: fc.array(fc.integer({ min: -2, max: 2 }), { minLength: n, maxLength: n }),
        edges: fc.array(fc.array(fc.nat(n - 1), { maxLength: 3 }), { minLength: n, maxLength: n }),
        extra: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 3 }),
      })
      .map(({ absent, priorities, edges, extra }) => {
        const installed = n - absent;
        const requires: string[][] = all.map(() => []);
        edges.forEach((targets, i) => {
          for (const j of targets) if (i < installed && (j < i || j >= installed)) requires[i]?.push(all[j] as string);
        });
        for (const [i, j] of extra) if (i < installed) requires[i]?.push(all[j] as string);
        return {
          exts: all
            .slice(0, installed)
            .map((name, i) => ({ name, requires: requires[i] ?? [], priority: priorities[i] ?? 0 })),
          absent: all.slice(installed),
        };
      });
  });

const codePoints = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0) ?? 0);
function compareKeys(a: OrderInput, b: OrderInput): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  const x = codePoints(a.name);
  const y = codePoints(b.name);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  return x.length - y.length;
}

/** Names reachable from `from` over one or more requirement edges (installed or not). */
function reachable(byName: Map<string, OrderInput>, from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [...(byName.get(from)?.requires ?? [])];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    todo.push(...(byName.get(next)?.requires ?? []));
  }
  return seen;
}

/** The oracle for property 4: which installed names reach a missing name or a cycle. */
function brokenNames(exts: readonly OrderInput[]): Set<string> {
  const byName = new Map(exts.map((e) => [e.name, e]));
  const onCycle = (name: string): boolean => reachable(byName, name).has(name);
  const broken = new Set<string>();
  for (const e of exts) {
    const region = [e.name, ...reachable(byName, e.name)];
    if (region.some((name) => !byName.has(name) || onCycle(name))) broken.add(e.name);
  }
  return broken;
}

/** A deterministic shuffle (mulberry32), so fast-check can shrink and replay it. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let s = seed >>> 0;
  const rand = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const RUNS = { numRuns: 300 };

describe("registryOrder() properties", () => {
  test("(1) every extension in the order comes after all of its requirements", () => {
    fc.assert(
      fc.property(graphs, ({ exts }) => {
        const { order } = registryOrder(exts);
        const position = new Map(order.map((name, i) => [name, i]));
        for (const e of exts) {
          const at = position.get(e.name);
          if (at === undefined) continue;
          for (const r of e.requires) expect(position.get(r) ?? Infinity).toBeLessThan(at);
        }
      }),
      RUNS,
    );
  });

  test("(2) the result does not depend on the input order nor on the order of requires", () => {
    fc.assert(
      fc.property(graphs, fc.integer(), ({ exts }, seed) => {
        const again = shuffled(exts, seed).map((e, i) => ({ ...e, requires: shuffled(e.requires, seed + i + 1) }));
        const first = registryOrder(exts);
        const second = registryOrder(again);
        expect(second.order).toEqual(first.order);
        expect([...second.inactive]).toEqual([...first.inactive]);
      }),
      RUNS,
    );
  });

  test("(3) every input name is in exactly one of order and inactive, and nothing else is", () => {
    fc.assert(
      fc.property(graphs, ({ exts }) => {
        const { order, inactive } = registryOrder(exts);
        expect(new Set(order).size).toBe(order.length);
        for (const name of order) expect(inactive.has(name)).toBe(false);
        expect([...order, ...inactive.keys()].sort()).toEqual(exts.map((e) => e.name).sort());
      }),
      RUNS,
    );
  });

  test("(4) an extension is inactive iff it reaches a missing name or a cycle, and its chain leads there", () => {
    fc.assert(
      fc.property(graphs, ({ exts, absent }) => {
        const { inactive } = registryOrder(exts);
        const byName = new Map(exts.map((e) => [e.name, e]));
        expect([...inactive.keys()].sort()).toEqual([...brokenNames(exts)].sort());
        for (const [name, problem] of inactive) {
          const { chain } = problem;
          expect(chain[0]).toBe(name);
          for (let i = 0; i + 1 < chain.length; i++)
            expect(byName.get(chain[i] as string)?.requires).toContain(chain[i + 1]);
          const last = chain[chain.length - 1] as string;
          const body = chain.slice(0, -1);
          expect(body.every((n) => byName.has(n))).toBe(true);
          expect(new Set(body).size).toBe(body.length);
          if (problem.kind === "missing") {
            expect(absent).toContain(last);
            expect(problem.missing).toBe(last);
            expect(problem.extension).toBe(chain[chain.length - 2]);
          } else {
            expect(body).toContain(last);
            // An extension on a cycle reports its own cycle.
            if (reachable(byName, name).has(name)) expect(last).toBe(name);
          }
        }
      }),
      RUNS,
    );
  });

  test("(5) active extensions without requirements keep (priority, name) order among themselves", () => {
    fc.assert(
      fc.property(graphs, ({ exts }) => {
        const { order } = registryOrder(exts);
        const byName = new Map(exts.map((e) => [e.name, e]));
        const roots = order.map((name) => byName.get(name) as OrderInput).filter((e) => e.requires.length === 0);
        for (let i = 0; i + 1 < roots.length; i++)
          expect(compareKeys(roots[i] as OrderInput, roots[i + 1] as OrderInput)).toBeLessThan(0);
      }),
      RUNS,
    );
  });

  test("(6) the order is exactly the greedy one: each next is the smallest (priority, name) that is ready", () => {
    fc.assert(
      fc.property(graphs, ({ exts }) => {
        const { order } = registryOrder(exts);
        const active = exts.filter((e) => !brokenNames(exts).has(e.name));
        const placed = new Set<string>();
        const expected: string[] = [];
        for (;;) {
          const ready = active
            .filter((e) => !placed.has(e.name) && e.requires.every((r) => placed.has(r)))
            .sort(compareKeys);
          const next = ready[0];
          if (next === undefined) break;
          expected.push(next.name);
          placed.add(next.name);
        }
        expect(order).toEqual(expected);
      }),
      RUNS,
    );
  });
});
