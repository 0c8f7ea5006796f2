/**
 * Bundle activation: which extensions a session runs, each whole or not at all.
 *
 * An extension is active when it is wanted (preferences), approved, has not
 * failed (boot, served/declared mismatch), all it requires is active, and none
 * of its tool or command names collides with an extension earlier in registry
 * order (nor any of its route or compaction strategy names). Anything else
 * makes it inactive with the reason — and every extension that requires it
 * inactive too; unrelated extensions keep working.
 *
 * Pure: the session (issue 5) feeds it what it knows and re-plans after a
 * failure. Groundwork for issue 5.
 */
import { describeProblem, registryOrder, type OrderInput } from "./order.js";

export interface Candidate {
  readonly name: string;
  readonly requires: readonly string[];
  readonly priority: number;
  readonly tools: readonly string[];
  readonly commands: readonly string[];
  /** Its `[[route]]` names: a host route has one owner per session, like a tool. */
  readonly routes: readonly string[];
  /** Its `[[compaction]]` strategy names, one owner each. */
  readonly compactions: readonly string[];
  /** Wanted in this session (the effective preference). */
  readonly enabled: boolean;
  /** Why it is not wanted, when it is not (default: "disabled in this session"). */
  readonly disabledReason?: string;
  /** Null when approved for what is installed; otherwise why not (names the command that fixes it). */
  readonly notApproved: string | null;
  /** Set when it failed to activate (boot failure, served/declared mismatch). */
  readonly failed?: string;
}

export interface Plan {
  /** Active extensions in registry order. */
  readonly active: readonly string[];
  /** Inactive extensions and why (disabled ones included, with that reason). */
  readonly inactive: ReadonlyMap<string, string>;
  /** Which extension serves each tool name. */
  readonly tools: ReadonlyMap<string, string>;
  /** Which extension serves each command name. */
  readonly commands: ReadonlyMap<string, string>;
  /** Which extension serves each route name. */
  readonly routes: ReadonlyMap<string, string>;
  /** Which extension serves each compaction strategy name. */
  readonly compactions: ReadonlyMap<string, string>;
}

/** The names two extensions may not share in one session, with how a reason shows each. */
const OWNED = [
  { field: "tools", noun: (n: string) => `tool '${n}'` },
  { field: "commands", noun: (n: string) => `command '/${n}'` },
  { field: "routes", noun: (n: string) => `route '${n}'` },
  { field: "compactions", noun: (n: string) => `compaction strategy '${n}'` },
] as const;

/** Plans a session's activation from its candidates. */
export function planActivation(candidates: readonly Candidate[]): Plan {
  const inactive = new Map<string, string>();
  const eligible = candidates.filter((c) => {
    if (!c.enabled) inactive.set(c.name, c.disabledReason ?? "disabled in this session");
    else if (c.notApproved !== null) inactive.set(c.name, c.notApproved);
    else if (c.failed !== undefined) inactive.set(c.name, c.failed);
    else return true;
    return false;
  });
  // Requirements on extensions that are inactive for any reason count as missing.
  const input: OrderInput[] = eligible.map((c) => ({ name: c.name, requires: c.requires, priority: c.priority }));
  const order = registryOrder(input);
  for (const [name, problem] of order.inactive) {
    const root = problem.kind === "missing" ? inactive.get(problem.missing) : undefined;
    inactive.set(
      name,
      problem.kind === "missing" && root !== undefined
        ? `needs '${problem.missing}' (${problem.chain.join(" → ")}), which is inactive: ${root}`
        : describeProblem(problem),
    );
  }

  // Collisions, in registry order: the earlier extension keeps the name, the later one is inactive whole.
  const byName = new Map(eligible.map((c) => [c.name, c]));
  const owners = {
    tools: new Map<string, string>(),
    commands: new Map<string, string>(),
    routes: new Map<string, string>(),
    compactions: new Map<string, string>(),
  };
  const active: string[] = [];
  for (const name of order.order) {
    const c = byName.get(name)!;
    const missing = c.requires.find((r) => inactive.has(r));
    if (missing !== undefined) {
      inactive.set(name, `requires '${missing}', which is inactive: ${inactive.get(missing)}`);
      continue;
    }
    const collision = collisionOf(c, owners);
    if (collision !== null) {
      inactive.set(name, collision);
      continue;
    }
    for (const { field } of OWNED) for (const n of c[field]) owners[field].set(n, name);
    active.push(name);
  }
  return { active, inactive, ...owners };
}

/** The first name of `c` an earlier extension already owns, as the reason `c` is inactive; null when none. */
function collisionOf(
  c: Candidate,
  owners: Record<(typeof OWNED)[number]["field"], ReadonlyMap<string, string>>,
): string | null {
  for (const { field, noun } of OWNED) {
    const taken = c[field].find((n) => owners[field].has(n));
    if (taken !== undefined)
      return `its ${noun(taken)} collides with '${owners[field].get(taken)}', which comes earlier in registry order`;
  }
  return null;
}
