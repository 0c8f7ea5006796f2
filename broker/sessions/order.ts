/**
 * Registry order: the one deterministic order in which a session's extensions
 * are registered, booted and asked by the hook bus.
 *
 * The rule, in full:
 *   1. dependency order first — an extension always comes after everything it
 *      `requires`, transitively;
 *   2. then `priority`, lower first;
 *   3. then `name`, in Unicode code-point order.
 * Equivalently: a topological sort that, among the extensions whose
 * requirements are all already placed, always places the smallest
 * (priority, name) next. The result depends only on the set of extensions,
 * never on the order they were listed or installed in, nor on the order of
 * their `requires` lists.
 *
 * An extension that cannot be ordered is inactive instead, with the chain of
 * names that leads to the problem (see {@link registryOrder}).
 *
 * Pure: no I/O, no imports.
 */

/** One extension as the order sees it. */
export interface OrderInput {
  /** The extension's name; unique within one call. */
  name: string;
  /** Names of the extensions it needs, from its manifest's `requires`. Duplicates are ignored. */
  requires: readonly string[];
  /**
   * The extension-level priority: lower runs first, among extensions whose
   * dependency order does not already decide. Any number but NaN; the
   * default (0) is the caller's business.
   */
  priority: number;
}

/**
 * Why an extension is inactive. `chain` always starts with the inactive
 * extension itself and follows `requires` edges to the root problem:
 *  - `missing`: the chain ends with the name that is not installed, e.g.
 *    `["app", "lib", "missing-dep"]`; `extension` is the one that names it
 *    (`"lib"`: the second-to-last entry) and `missing` the absent name.
 *  - `cycle`: the chain ends by returning to a name already in it, closing a
 *    cycle, e.g. `["a", "b", "c", "a"]` for a member of the cycle a → b → c → a,
 *    `["a", "a"]` for an extension that requires itself, and
 *    `["app", "a", "b", "a"]` for `app`, which requires a member of a cycle.
 */
export type OrderProblem =
  | { kind: "missing"; extension: string; chain: string[]; missing: string }
  | { kind: "cycle"; chain: string[] };

/** Compares two strings by Unicode code point (not by UTF-16 code unit as `<` does). */
function compareNames(a: string, b: string): number {
  if (a === b) return 0;
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const ca = ia.next();
    const cb = ib.next();
    if (ca.done === true) return cb.done === true ? 0 : -1;
    if (cb.done === true) return 1;
    const pa = ca.value.codePointAt(0) ?? 0;
    const pb = cb.value.codePointAt(0) ?? 0;
    if (pa !== pb) return pa < pb ? -1 : 1;
  }
}

/**
 * Orders `extensions` for registration and reports the ones that cannot run.
 *
 * `order` is the registry order: dependency order, then `priority` (lower
 * first), then `name` (code-point order) — at every step the smallest
 * (priority, name) among the extensions whose requirements are all placed.
 *
 * `inactive` holds every extension that is not in `order`, with its problem:
 *  - it is itself on a requirement cycle (requiring itself included): the
 *    shortest cycle through it, as `kind: "cycle"` — this comes first;
 *  - otherwise, of the chains below, the shortest wins, and on equal length
 *    the one whose second name comes first in code-point order:
 *    - it requires a name that is not among `extensions`: `kind: "missing"`,
 *      chain `[itself, missing]`;
 *    - it requires an inactive extension: that extension's problem with its
 *      own name prepended to the chain (so everything that requires an
 *      inactive extension, transitively, is inactive too).
 * Every name in `extensions` ends up in exactly one of `order` and
 * `inactive`; extensions that do not reach a problem are unaffected by it.
 * The result does not depend on the order of `extensions` or of any
 * `requires` list.
 *
 * @throws Error when two extensions share a name or a priority is NaN — both
 *   programming errors of the caller, not user problems.
 */
export function registryOrder(extensions: readonly OrderInput[]): {
  order: string[];
  inactive: Map<string, OrderProblem>;
} {
  const byName = new Map<string, OrderInput>();
  for (const ext of extensions) {
    if (byName.has(ext.name)) throw new Error(`registryOrder: the extension name '${ext.name}' is given twice`);
    if (Number.isNaN(ext.priority)) throw new Error(`registryOrder: the priority of '${ext.name}' is NaN`);
    byName.set(ext.name, ext);
  }
  // Sorted, de-duplicated requirements: every walk below visits them in one fixed order.
  const reqs = new Map<string, string[]>();
  for (const ext of extensions) reqs.set(ext.name, [...new Set(ext.requires)].sort(compareNames));
  const reqsOf = (name: string): string[] => reqs.get(name) ?? [];
  const names = [...byName.keys()].sort(compareNames);

  const inactive = new Map<string, OrderProblem>();

  // 1. Extensions on a cycle: a breadth-first walk from each finds its shortest
  //    cycle (ties: the first found, neighbours in name order).
  for (const start of names) {
    const parent = new Map<string, string>();
    const queue: string[] = [start];
    let cycle: string[] | null = null;
    for (let head = 0; head < queue.length && cycle === null; head++) {
      const u = queue[head] as string;
      for (const w of reqsOf(u)) {
        if (!byName.has(w)) continue;
        if (w === start) {
          const back: string[] = [];
          for (let x: string | undefined = u; x !== undefined; x = parent.get(x)) back.push(x);
          cycle = [...back.reverse(), start];
          break;
        }
        if (!parent.has(w)) {
          parent.set(w, u);
          queue.push(w);
        }
      }
    }
    if (cycle !== null) inactive.set(start, { kind: "cycle", chain: cycle });
  }

  // 2. Everything else, requirements before requirers. Off the cycles the
  //    requirement graph is acyclic, so this post-order walk terminates.
  const healthy = new Set<string>();
  const decided = (name: string): boolean => !byName.has(name) || healthy.has(name) || inactive.has(name);
  const decide = (name: string): void => {
    const candidates: OrderProblem[] = [];
    for (const r of reqsOf(name)) {
      const problem = inactive.get(r);
      if (!byName.has(r)) candidates.push({ kind: "missing", extension: name, chain: [name, r], missing: r });
      else if (problem !== undefined) candidates.push({ ...problem, chain: [name, ...problem.chain] });
    }
    // Shortest chain first; on equal length, the requirement first in name order.
    candidates.sort((a, b) => a.chain.length - b.chain.length || compareNames(a.chain[1] ?? "", b.chain[1] ?? ""));
    const best = candidates[0];
    if (best === undefined) healthy.add(name);
    else inactive.set(name, best);
  };
  for (const start of names) {
    const stack: string[] = [start];
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as string;
      if (decided(top)) {
        stack.pop();
        continue;
      }
      const pending = reqsOf(top).filter((r) => !decided(r));
      if (pending.length > 0) stack.push(...pending);
      else {
        decide(top);
        stack.pop();
      }
    }
  }

  // 3. The healthy ones, topologically, always taking the smallest (priority, name) that is ready.
  const before = (a: OrderInput, b: OrderInput): boolean =>
    a.priority < b.priority || (a.priority === b.priority && compareNames(a.name, b.name) < 0);
  const waiting = new Map<string, number>();
  const requiredBy = new Map<string, string[]>();
  const ready: OrderInput[] = [];
  for (const name of healthy) {
    const own = reqsOf(name);
    waiting.set(name, own.length);
    for (const r of own) requiredBy.set(r, [...(requiredBy.get(r) ?? []), name]);
    if (own.length === 0) ready.push(byName.get(name) as OrderInput);
  }
  const order: string[] = [];
  while (ready.length > 0) {
    let min = 0;
    for (let i = 1; i < ready.length; i++) if (before(ready[i] as OrderInput, ready[min] as OrderInput)) min = i;
    const next = ready.splice(min, 1)[0] as OrderInput;
    order.push(next.name);
    for (const dependent of requiredBy.get(next.name) ?? []) {
      const left = (waiting.get(dependent) ?? 0) - 1;
      waiting.set(dependent, left);
      if (left === 0) ready.push(byName.get(dependent) as OrderInput);
    }
  }
  return { order, inactive };
}

/**
 * One sentence for an inactive extension's problem, naming the whole chain; the
 * subject is the extension, so callers write `${name} ${describeProblem(p)}`:
 *  - `requires 'missing-dep', which is not installed (app → lib → missing-dep)`
 *  - `is part of a requirement cycle (a → b → c → a)`
 *  - `depends on a requirement cycle (app → a → b → a)`
 */
export function describeProblem(p: OrderProblem): string {
  const chain = p.chain.join(" → ");
  if (p.kind === "missing") return `requires '${p.missing}', which is not installed (${chain})`;
  const onIt = p.chain.length > 0 && p.chain[0] === p.chain[p.chain.length - 1];
  return `${onIt ? "is part of" : "depends on"} a requirement cycle (${chain})`;
}
