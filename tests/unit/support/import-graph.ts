/**
 * The checker behind tests/unit/layering.test.ts, on an in-memory import graph
 * (file → the files it imports), so it can be fed a synthetic graph and shown
 * to fail: the circles (strongly connected components, Tarjan) and the edges
 * that break a layer order.
 */

export type Graph = ReadonlyMap<string, ReadonlySet<string>>;

/** A graph from `[from, to]` pairs (every file named becomes a node). */
export function graphOf(edges: ReadonlyArray<readonly [string, string]>): Graph {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    if (!graph.has(to)) graph.set(to, new Set());
    const out = graph.get(from) ?? new Set<string>();
    out.add(to);
    graph.set(from, out);
  }
  return graph;
}

/** The strongly connected components, each sorted, in Tarjan's order (iterative: no recursion limit). */
export function stronglyConnected(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    // Each frame: a node and the successors it has yet to visit.
    const frames: Array<{ node: string; rest: string[] }> = [];
    const enter = (node: string): void => {
      index.set(node, next);
      low.set(node, next);
      next += 1;
      stack.push(node);
      onStack.add(node);
      frames.push({ node, rest: [...(graph.get(node) ?? [])].sort() });
    };
    enter(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const successor = frame.rest.shift();
      if (successor !== undefined) {
        if (!index.has(successor)) enter(successor);
        else if (onStack.has(successor)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(successor)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component.sort());
      }
    }
  }
  return components;
}

/** A shortest circle through `start` inside `within`, as `start → … → start` (breadth first). */
export function circleThrough(graph: Graph, start: string, within: ReadonlySet<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const successor of [...(graph.get(node) ?? [])].sort()) {
      if (!within.has(successor)) continue;
      if (successor === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(successor)) {
        cameFrom.set(successor, node);
        queue.push(successor);
      }
    }
  }
  return [start];
}

export interface Circle {
  /** Every file of the component, sorted. */
  readonly files: readonly string[];
  /** One circle through its first file, `a → b → … → a`. */
  readonly path: string;
}

/** Every component of two or more files, and every file that imports itself. */
export function circles(graph: Graph): Circle[] {
  return stronglyConnected(graph)
    .filter((files) => files.length > 1 || graph.get(files[0]!)?.has(files[0]!) === true)
    .map((files) => ({ files, path: circleThrough(graph, files[0]!, new Set(files)).join(" → ") }));
}

/**
 * One layer: the folders (ending in `/`) and files (ending in `.ts`) it holds.
 * `stack` names the program a layer runs in; a layer without one (the wire) is
 * shared by all. `apart`: its folders are peers that must not import one another.
 */
export interface Layer {
  readonly name: string;
  readonly members: readonly string[];
  readonly stack?: string;
  readonly apart?: boolean;
}

export interface Placed {
  readonly layer: number;
  /** The member of the layer the file is in: its folder or itself. */
  readonly member: string;
}

/** Where `file` sits: the layer whose member holds it (the longest such member), or null. */
export function place(layers: readonly Layer[], file: string): Placed | null {
  let best: Placed | null = null;
  for (const [at, layer] of layers.entries()) {
    for (const member of layer.members) {
      const holds = member.endsWith("/") ? file.startsWith(member) : file === member;
      if (holds && (best === null || member.length > best.member.length)) best = { layer: at, member };
    }
  }
  return best;
}

export type Rule = "unplaced" | "imports the Broker" | "crosses stacks" | "upward" | "sideways";

export interface Violation {
  readonly rule: Rule;
  readonly from: string;
  /** The file imported; for `unplaced`, empty. */
  readonly to: string;
  readonly why: string;
}

export interface LayerRules {
  readonly layers: readonly Layer[];
  /** The Broker class's file, and the layers that may import it (by name). */
  readonly broker: { readonly file: string; readonly importers: readonly string[] };
}

/**
 * Every file no layer holds, and every import that breaks the order: each edge
 * under one rule only, the first that applies of: importing the Broker from a
 * layer not listed for it, crossing from one stack into another, going up the
 * order, and going between two folders of a layer whose folders keep apart.
 */
export function layerViolations(graph: Graph, rules: LayerRules): Violation[] {
  const { layers, broker } = rules;
  const out: Violation[] = [];
  const files = [...graph.keys()].sort();
  for (const file of files) {
    if (place(layers, file) === null) out.push({ rule: "unplaced", from: file, to: "", why: "in no layer" });
  }
  for (const from of files) {
    const a = place(layers, from);
    if (a === null) continue;
    const la = layers[a.layer]!;
    for (const to of [...graph.get(from)!].sort()) {
      const b = place(layers, to);
      if (b === null) continue;
      const lb = layers[b.layer]!;
      const edge = { from, to };
      if (to === broker.file && from !== to && !broker.importers.includes(la.name)) {
        out.push({ ...edge, rule: "imports the Broker", why: `${la.name} may not import the Broker` });
      } else if (la.stack !== undefined && lb.stack !== undefined && la.stack !== lb.stack) {
        out.push({ ...edge, rule: "crosses stacks", why: `${la.stack} (${la.name}) imports ${lb.stack} (${lb.name})` });
      } else if (a.layer < b.layer) {
        out.push({ ...edge, rule: "upward", why: `${la.name} imports ${lb.name}, above it` });
      } else if (a.layer === b.layer && la.apart === true && a.member !== b.member) {
        out.push({ ...edge, rule: "sideways", why: `${a.member} imports ${b.member}, a peer in ${la.name}` });
      }
    }
  }
  return out;
}
