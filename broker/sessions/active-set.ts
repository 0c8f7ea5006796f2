/**
 * A session's active set: which extensions run for it, and why the others do not.
 *
 *   open ──► plan (preferences ∩ approved ∩ requires ∩ no collisions)
 *        ──► boot each planned satellite (a failure makes it, and everything
 *            that requires it, inactive; re-plan until nothing changes)
 *        ──► active set swapped in at once
 *
 * `reload` runs the same steps beside the live set and swaps only at the end:
 * a failed boot leaves that extension inactive with the reason and its wanted
 * preference saved for the next reload; an error mid-way leaves the session as
 * it was. A lost approval (revoked or changed in any process) is noticed on the
 * next call: the extension and its dependents drop out, the rest keep working.
 */
import type { Broker } from "../broker.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { BUILTIN_HOOKS_NAME, BUILTIN_HOOKS_PRIORITY, BUILTIN_HOOK_EVENTS, type BuiltinHooks } from "../hooks/builtin-hooks.js";
import { matchOf } from "../install/hook-row.js";
import type { Installed } from "../registry/registry.js";
import type { Failure } from "../base/outcome.js";
import type { SessionScope } from "../session-scope.js";
import { planActivation, type Candidate, type Plan } from "./activation.js";
import type { Preference, Preferences } from "./preferences.js";

export type ExtensionState = "active" | "inactive" | "disabled";

/** What an extension contributes and needs, as its manifest (or built-in row) says. */
interface Contributions {
  readonly name: string;
  readonly builtin: boolean;
  readonly priority: number;
  readonly requires: readonly string[];
  readonly tools: readonly string[];
  readonly commands: readonly string[];
  readonly routes: readonly string[];
  readonly compactions: readonly string[];
}

export interface ExtensionStatus extends Contributions {
  readonly state: ExtensionState;
  /** Why it is not active (null when active). */
  readonly reason: string | null;
  readonly preference: Preference;
  /** The events it hooks. */
  readonly hooks: readonly string[];
  /** The `match` list of each hook that has one, by event (a hook not listed is asked about every subject). */
  readonly matchers: Readonly<Record<string, readonly string[]>>;
}

export interface ReloadReport {
  readonly activated: readonly string[];
  readonly deactivated: readonly string[];
  /** Wanted but not active, with why; their preference stays saved, so the next reload retries. */
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
}

/** One extension the session knows of: installed or built in. */
interface Known extends Contributions {
  /** `match`: the manifest row's patterns; undefined: every subject. */
  readonly hooks: readonly { readonly event: string; readonly onError: "note" | "block"; readonly match: readonly string[] | undefined }[];
  readonly installed: Installed | null;
  readonly notApproved: string | null;
}

interface Applied {
  readonly plan: Plan;
  readonly known: ReadonlyMap<string, Known>;
  /** Why a wanted extension failed to activate (boot failure, mismatch, broken hooks.json). */
  readonly failed: ReadonlyMap<string, string>;
}

function emptyApplied(): Applied {
  return { plan: { active: [], inactive: new Map(), tools: new Map(), commands: new Map(), routes: new Map(), compactions: new Map() }, known: new Map(), failed: new Map() };
}

export class ActiveSet {
  readonly id: string;
  readonly #broker: Broker;
  readonly #scope: SessionScope;
  readonly #preferences: Preferences;
  readonly #builtin: BuiltinHooks;
  #applied: Applied = emptyApplied();
  #epoch: number;
  /** Set when the session closes: every use after it is refused. */
  closed = false;

  constructor(broker: Broker, scope: SessionScope, preferences: Preferences, builtin: BuiltinHooks) {
    this.id = scope.id;
    this.#broker = broker;
    this.#scope = scope;
    this.#preferences = preferences;
    this.#builtin = builtin;
    this.#epoch = broker.approvalEpoch;
  }

  /** What is active now, what every known extension is, and why the wanted ones failed. */
  get applied(): Applied {
    return this.#applied;
  }

  /** Swaps in a new active set (after `activate`). */
  apply(applied: Applied): void {
    this.#applied = applied;
    this.#epoch = this.#broker.approvalEpoch;
  }

  /** Everything the session could run: installed extensions and the built-ins. */
  #known(): Map<string, Known> {
    const known = new Map<string, Known>();
    for (const installed of this.#broker.registry.list()) {
      const m = installed.manifest;
      let notApproved: string | null = null;
      try {
        this.#broker.approved(m.name);
      } catch (err) {
        notApproved = (err as Error).message;
      }
      known.set(m.name, {
        name: m.name,
        builtin: false,
        priority: m.priority,
        requires: m.requires,
        tools: m.tool.map((t) => t.name),
        commands: m.command.map((c) => c.name),
        routes: m.route.map((r) => r.name),
        compactions: m.compaction.map((c) => c.name),
        hooks: m.hook.map((h) => ({ event: h.event, onError: h.on_error ?? "note", match: matchOf(h) })),
        installed,
        notApproved,
      });
    }
    known.set(BUILTIN_HOOKS_NAME, {
      name: BUILTIN_HOOKS_NAME,
      builtin: true,
      priority: BUILTIN_HOOKS_PRIORITY,
      requires: [],
      tools: [],
      commands: [],
      routes: [],
      compactions: [],
      // The operator's hooks.json has matchers of its own, applied when the bus asks it.
      hooks: BUILTIN_HOOK_EVENTS.map((event) => ({ event, onError: "note" as const, match: undefined })),
      installed: null,
      notApproved: null,
    });
    return known;
  }

  #preference(k: Known): Preference {
    // The built-in command hooks are off unless an operator turns them on.
    return this.#preferences.effective(this.id, k.name, !k.builtin);
  }

  #wanted(k: Known): boolean {
    return this.#preference(k).enabled;
  }

  /** Why an extension is not wanted, by where the preference came from. */
  #unwantedReason(k: Known): string {
    switch (this.#preference(k).source) {
      case "session":
        return "disabled in this session";
      case "global":
        return `disabled by the global default; turn it on with: tether session enable ${k.name}`;
      case "default":
        return `off by default; enable it with: tether session enable ${k.name}`;
    }
  }

  /** Plans from `known`; with `only`, nothing outside it becomes active (a refresh adds nothing). */
  #plan(known: ReadonlyMap<string, Known>, failed: ReadonlyMap<string, string>, only?: ReadonlySet<string>): Plan {
    const candidates: Candidate[] = [...known.values()].map((k) => {
      const failure = failed.get(k.name);
      const wanted = this.#wanted(k);
      const allowed = only === undefined || only.has(k.name);
      const disabledReason = !wanted
        ? this.#unwantedReason(k)
        : (this.#applied.plan.inactive.get(k.name) ?? "not active yet; reload the session to activate it");
      return {
        name: k.name,
        requires: k.requires,
        priority: k.priority,
        tools: k.tools,
        commands: k.commands,
        routes: k.routes,
        compactions: k.compactions,
        enabled: wanted && allowed,
        disabledReason,
        notApproved: k.notApproved,
        ...(failure !== undefined ? { failed: failure } : {}),
      };
    });
    return planActivation(candidates);
  }

  /** Starts one planned extension; null when it is up, else why not. */
  async #start(k: Known): Promise<string | null> {
    if (k.builtin) {
      try {
        this.#builtin.load();
        return null;
      } catch (err) {
        return (err as Error).message;
      }
    }
    try {
      await this.#scope.activate(k.name);
      return null;
    } catch (err) {
      const code = err instanceof TetherError ? ` (${err.code})` : "";
      return `failed to start${code}: ${(err as Error).message}`;
    }
  }

  /**
   * Plans, boots what the plan needs and re-plans after each failure until the
   * plan stands. `running` are the extensions whose satellites are already up.
   */
  async activate(running: ReadonlySet<string>): Promise<{ applied: Applied; started: string[] }> {
    const known = this.#known();
    const failed = new Map<string, string>();
    const up = new Set(running);
    const started: string[] = [];
    try {
      for (;;) {
        const plan = this.#plan(known, failed);
        const toStart = plan.active.filter((name) => !up.has(name));
        if (toStart.length === 0) {
          // Started, then dropped because something it requires failed later: stop it again.
          const extra = started.filter((name) => !plan.active.includes(name));
          await Promise.all(extra.map((name) => this.#scope.deactivate(name)));
          return { applied: { plan, known, failed }, started: started.filter((name) => plan.active.includes(name)) };
        }
        // Independent boots in parallel; the plan is re-made from their results.
        const results = await Promise.all(toStart.map(async (name) => [name, await this.#start(known.get(name)!)] as const));
        for (const [name, failure] of results) {
          if (failure === null) {
            up.add(name);
            started.push(name);
          } else {
            failed.set(name, failure);
          }
        }
      }
    } catch (err) {
      // Nothing half-applied: what this activation started is stopped again.
      await Promise.all(started.map((name) => this.#scope.deactivate(name).catch(() => {})));
      throw err;
    }
  }

  /** Notices lost approvals: the affected extensions and their dependents drop out; nothing is added. */
  refresh(): void {
    if (this.closed) throw new TetherError(BrokerCode.closed, `Session '${this.id}' is closed`);
    const epoch = this.#broker.approvalEpoch;
    if (epoch === this.#epoch) return;
    this.#epoch = epoch;
    const known = this.#known();
    const before = new Set(this.#applied.plan.active);
    const plan = this.#plan(known, this.#applied.failed, before);
    // Anything that was active and is not now: its status says why (the plan's reason); its satellite stops.
    const dropped = [...before].filter((name) => !plan.active.includes(name));
    this.#applied = { plan, known, failed: this.#applied.failed };
    for (const name of dropped) void this.#scope.deactivate(name).catch(() => {});
  }

  /**
   * Applies the saved preferences (and approvals) to the live session. The new
   * set is booted beside the old one and swapped in at once; satellites of
   * extensions that stay active keep running.
   */
  async reload(): Promise<ReloadReport> {
    this.refresh();
    const before = new Set(this.#applied.plan.active);
    let result: { applied: Applied; started: string[] };
    try {
      result = await this.activate(before);
    } catch (err) {
      throw new TetherError(BrokerCode.closed, `Reload of session '${this.id}' failed; the session is unchanged: ${(err as Error).message}`);
    }
    const { applied } = result;
    const after = new Set(applied.plan.active);
    const deactivated = [...before].filter((name) => !after.has(name));
    const activated = applied.plan.active.filter((name) => !before.has(name));
    this.#applied = applied;
    this.#epoch = this.#broker.approvalEpoch;
    await Promise.all(deactivated.map((name) => this.#scope.deactivate(name)));
    const failed = [...applied.failed].map(([name, reason]) => ({ name, reason }));
    return { activated, deactivated, failed };
  }

  /** Every extension the session knows of, active ones first in registry order, then the rest by name. */
  status(): ExtensionStatus[] {
    this.refresh();
    const { plan, known } = this.#applied;
    const row = (k: Known, state: ExtensionState, reason: string | null): ExtensionStatus => ({
      name: k.name,
      state,
      reason,
      builtin: k.builtin,
      preference: this.#preference(k),
      priority: k.priority,
      requires: k.requires,
      tools: k.tools,
      commands: k.commands,
      routes: k.routes,
      compactions: k.compactions,
      hooks: k.hooks.map((h) => h.event),
      matchers: Object.fromEntries(k.hooks.flatMap((h) => (h.match !== undefined ? [[h.event, h.match]] : []))),
    });
    const active = plan.active.map((name) => row(known.get(name)!, "active", null));
    const rest = [...known.values()]
      .filter((k) => !plan.active.includes(k.name))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((k) => {
        const wanted = this.#wanted(k);
        const reason = wanted ? (plan.inactive.get(k.name) ?? "not active") : this.#unwantedReason(k);
        const state: ExtensionState = wanted ? "inactive" : "disabled";
        const retry = wanted && this.#applied.failed.has(k.name) ? " (still wanted: the next reload retries it)" : "";
        return row(k, state, `${reason}${retry}`);
      });
    return [...active, ...rest];
  }

  /** The tools the model may call in this session, with the extension serving each. */
  tools(): { name: string; extension: string; description: string; parameters: Record<string, unknown> }[] {
    this.refresh();
    const out: { name: string; extension: string; description: string; parameters: Record<string, unknown> }[] = [];
    for (const name of this.#applied.plan.active) {
      const k = this.#applied.known.get(name);
      for (const t of k?.installed?.manifest.tool ?? []) out.push({ name: t.name, extension: name, description: t.description, parameters: t.parameters });
    }
    return out;
  }

  /** The session's `/commands`, with the extension serving each. */
  commands(): { name: string; extension: string; description: string }[] {
    this.refresh();
    const out: { name: string; extension: string; description: string }[] = [];
    for (const name of this.#applied.plan.active) {
      const k = this.#applied.known.get(name);
      for (const c of k?.installed?.manifest.command ?? []) out.push({ name: c.name, extension: name, description: c.description });
    }
    return out;
  }

  /** The answer for a name no active extension serves: names the inactive one that would, and why. */
  notServed(what: "tool" | "command", name: string, served: string[]): Failure {
    for (const k of this.#applied.known.values()) {
      const has = what === "tool" ? k.tools.includes(name) : k.commands.includes(name);
      if (has && !this.#applied.plan.active.includes(k.name)) {
        const reason = this.#applied.plan.inactive.get(k.name) ?? "not active";
        return { ok: false, error: { code: BrokerCode.inactive, msg: `The ${what} '${what === "command" ? "/" : ""}${name}' belongs to '${k.name}', which is inactive in this session: ${reason}` } };
      }
    }
    const list = served.sort().map((n) => (what === "command" ? `/${n}` : n));
    return { ok: false, error: { code: WireCode.unknownTool, msg: `Unknown ${what} '${name}'; this session serves [${list.join(", ")}]` } };
  }

}
