/**
 * A session's active set: which extensions run for it, and why the others do not.
 *
 *   open ──► plan (preferences ∩ approved ∩ requires ∩ no collisions)
 *        ──► boot each planned satellite, then ask its context loaders and,
 *            if managed, its preparation (bundle-setup.ts); a failure makes
 *            it, and everything that requires it, inactive; re-plan until
 *            nothing changes
 *        ──► active set swapped in at once
 *
 * `reload` runs the same steps beside the live set and swaps only at the end:
 * a failed boot leaves that extension inactive with the reason and its wanted
 * preference saved for the next reload; an error mid-way leaves the session as
 * it was. A lost approval (revoked or changed in any process) is noticed on the
 * next call: the extension and its dependents drop out, the rest keep working.
 */
import type { KernelHost } from "../kernel/host.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { BUILTIN_HOOKS_NAME, type BuiltinHooks } from "../hooks/builtin-hooks.js";
import type { Manifest } from "../install/manifest.js";
import type { HooksFile } from "../hooks/hooks-file.js";
import { matcherWarnings } from "../hooks/matcher-warnings.js";
import type { Failure } from "../base/outcome.js";
import type { SessionScope } from "../kernel/session-scope.js";
import { planActivation, type Candidate, type Plan } from "./activation.js";
import { narrowPlan, setUpBundle, type Setup, type SetupSession } from "./bundle-setup.js";
import { composeContext } from "./composed-context.js";
import type { ContextPiece } from "./context-loaders.js";
import { knownExtensions, type Contributions, type Known } from "./known.js";
import { closeManaged, type CloseReason } from "./preparation.js";
import type { Preference, Preferences } from "./preferences.js";

export type ExtensionState = "active" | "inactive" | "disabled";

export interface ExtensionStatus extends Contributions {
  readonly state: ExtensionState;
  /** Why it is not active (null when active). */
  readonly reason: string | null;
  readonly preference: Preference;
  /** The events it hooks. */
  readonly hooks: readonly string[];
  /** The `match` list of each hook that has one, by event (a hook not listed is asked about every subject). */
  readonly matchers: Readonly<Record<string, readonly string[]>>;
  /** Declared tools and commands its preparation left off in this session. */
  readonly toolsOff: readonly string[];
  readonly commandsOff: readonly string[];
  /** Whether it observes this session (its approved `[observe]`, or what its preparation said). */
  readonly observes: boolean;
  /** Its preparation's warnings, and any of its context left out past the session's bound. */
  readonly warnings: readonly string[];
}

export interface ReloadReport {
  readonly activated: readonly string[];
  readonly deactivated: readonly string[];
  /** Wanted but not active, with why; their preference stays saved, so the next reload retries. */
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
  /** Closes of managed extensions that failed (they never block a reload). */
  readonly notes: readonly string[];
}

interface Applied {
  readonly plan: Plan;
  readonly known: ReadonlyMap<string, Known>;
  /** Why a wanted extension failed to activate (boot failure, mismatch, loader or preparation, broken hooks.json). */
  readonly failed: ReadonlyMap<string, string>;
  /** What each active extension's loaders and preparation gave this session. */
  readonly setups: ReadonlyMap<string, Setup>;
  /** The approvals' epoch when `known` was read: a change told since then is still to be noticed. */
  readonly epoch: number;
}

function emptyApplied(): Applied {
  return {
    plan: {
      active: [],
      inactive: new Map(),
      tools: new Map(),
      commands: new Map(),
      routes: new Map(),
      compactions: new Map(),
    },
    known: new Map(),
    failed: new Map(),
    setups: new Map(),
    epoch: 0,
  };
}

const BUILTIN_SETUP: Setup = { pieces: [], warnings: [], tools: null, commands: null, observes: false, managed: false };

/** A `/command` the session serves, with the arguments its manifest row names (an MCP prompt's). */
export interface SessionCommand {
  readonly name: string;
  readonly extension: string;
  readonly description: string;
  readonly arguments: Manifest["command"][number]["arguments"];
}

export class ActiveSet {
  readonly id: string;
  readonly #broker: KernelHost;
  readonly #scope: SessionScope;
  readonly #preferences: Preferences;
  readonly #builtin: BuiltinHooks;
  readonly #workspace: string;
  #applied: Applied = emptyApplied();
  /** Grows with every new active set (see `revision`). */
  #revision = 0;
  #pending: Pick<Applied, "plan" | "known"> | null = null;
  /** An approval or install changed since the active set was planned (told by the kernel's approvals). */
  #stale = false;
  readonly #unsubscribe: () => void;
  /** Failed closes not yet handed to a caller (a reload's report, the session's close). */
  #notes: string[] = [];
  #closed = false;

  constructor(
    broker: KernelHost,
    scope: SessionScope,
    preferences: Preferences,
    builtin: BuiltinHooks,
    workspace: string,
  ) {
    this.id = scope.id;
    this.#broker = broker;
    this.#scope = scope;
    this.#preferences = preferences;
    this.#builtin = builtin;
    this.#workspace = workspace;
    this.#unsubscribe = broker.approvals.subscribe(() => (this.#stale = true));
  }

  /** Set when the session closes: every use after it is refused, and changes are no longer followed. */
  get closed(): boolean {
    return this.#closed;
  }

  set closed(closed: boolean) {
    this.#closed = closed;
    if (closed) this.#unsubscribe();
  }

  /** What is active now, what every known extension is, and why the wanted ones failed. */
  get applied(): Applied {
    return this.#applied;
  }

  /**
   * The plan an activation is working toward, while it boots and prepares (null otherwise): its
   * extensions run code (a preparation) before their hooks are in force.
   */
  get pending(): Pick<Applied, "plan" | "known"> | null {
    return this.#pending;
  }

  /** Swaps in a new active set (after `activate`). */
  apply(applied: Applied): void {
    this.#set(applied);
  }

  #set(applied: Applied): void {
    this.#applied = applied;
    this.#revision += 1;
    // A change told while an activation booted came after it read the installs and approvals.
    this.#stale = this.#broker.approvals.epoch !== applied.epoch;
  }

  /**
   * Grows whenever the active set is worked out again (a reload, an
   * approval or install change, noticed here first): what `tools`,
   * `commands`, `context` and the active routes answer can only have
   * changed if it grew.
   */
  revision(): number {
    this.refresh();
    return this.#revision;
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
  #plan(
    known: ReadonlyMap<string, Known>,
    failed: ReadonlyMap<string, string>,
    setups: ReadonlyMap<string, Setup>,
    only?: ReadonlySet<string>,
  ): Plan {
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
    return narrowPlan(planActivation(candidates), setups);
  }

  /** A failed close is logged and kept for the caller's report; it never blocks. */
  #note(extension: string, text: string): void {
    this.#broker.log.warn(text, { session: this.id, extension });
    this.#notes.push(text);
  }

  /** The notes gathered since the last call. */
  takeNotes(): string[] {
    return this.#notes.splice(0);
  }

  /** hooks.json matcher groups that match none of the session's tools: said once, when the file is loaded. */
  #warnUnmatched(tools: readonly string[]): void {
    let file: HooksFile | null;
    try {
      file = this.#builtin.load();
    } catch {
      return; // A broken file is the activation's reason already.
    }
    if (file === null) return;
    for (const warning of matcherWarnings(file, tools)) this.#note(BUILTIN_HOOKS_NAME, warning);
  }

  /** Starts one planned extension: boots it, then its loaders and preparation. Its Setup, or why not. */
  async #start(k: Known, session: SetupSession): Promise<{ ok: true; setup: Setup } | { ok: false; reason: string }> {
    if (k.builtin) {
      try {
        this.#builtin.load();
        return { ok: true, setup: BUILTIN_SETUP };
      } catch (err) {
        return { ok: false, reason: (err as Error).message };
      }
    }
    try {
      await this.#scope.activate(k.name);
    } catch (err) {
      // Its initializer failed (init/initializers.ts): the message is the reason, as it is.
      if (err instanceof TetherError && err.code === BrokerCode.inactive) return { ok: false, reason: err.message };
      const code = err instanceof TetherError ? ` (${err.code})` : "";
      return { ok: false, reason: `failed to start${code}: ${(err as Error).message}` };
    }
    const live = this.#scope.live.get(k.name)!;
    const result = await setUpBundle(this.#scope, k.name, live.installed.manifest, live.approval.grants, session);
    if (!result.ok) {
      if (result.closeNote !== null) this.#note(k.name, result.closeNote);
      // A rejected bundle keeps no satellite running.
      await this.#scope.deactivate(k.name);
    }
    return result;
  }

  /** Lets one extension go: `close` first when it was prepared, then its satellite stops. */
  async #letGo(
    name: string,
    setup: Setup | undefined,
    reason: CloseReason,
    options: { abort?: boolean } = {},
  ): Promise<void> {
    if (setup?.managed === true) {
      const note = await closeManaged(this.#scope, name, reason);
      if (note !== null) this.#note(name, note);
    }
    await this.#scope.deactivate(name, options);
  }

  /**
   * Plans, boots (and sets up) what the plan needs and re-plans after each
   * failure until the plan stands. `running` are the extensions whose
   * satellites are already up (their setups are kept); `resumed` tells a
   * preparation the session was open before.
   */
  async activate(running: ReadonlySet<string>, resumed: boolean): Promise<{ applied: Applied; started: string[] }> {
    const epoch = this.#broker.approvals.epoch;
    const known = knownExtensions(this.#broker);
    const failed = new Map<string, string>();
    const setups = new Map([...this.#applied.setups].filter(([name]) => running.has(name)));
    const up = new Set(running);
    const started: string[] = [];
    try {
      for (;;) {
        const plan = this.#plan(known, failed, setups);
        this.#pending = { plan, known };
        const toStart = plan.active.filter((name) => !up.has(name));
        if (toStart.length === 0) {
          // Started (and prepared), then dropped because something it requires failed later: let it go again.
          const extra = started.filter((name) => !plan.active.includes(name));
          await Promise.all(extra.map((name) => this.#letGo(name, setups.get(name), "activation_failed")));
          for (const name of extra) setups.delete(name);
          if (started.includes(BUILTIN_HOOKS_NAME) && plan.active.includes(BUILTIN_HOOKS_NAME)) {
            this.#warnUnmatched([...plan.tools.keys()]);
          }
          this.#pending = null;
          return {
            applied: { plan, known, failed, setups, epoch },
            started: started.filter((name) => plan.active.includes(name)),
          };
        }
        // Independent boots in parallel; the plan is re-made from their results.
        const session: SetupSession = { id: this.id, workspace: this.#workspace, resumed, active: plan.active };
        const results = await Promise.all(
          toStart.map(async (name) => [name, await this.#start(known.get(name)!, session)] as const),
        );
        for (const [name, result] of results) {
          if (result.ok) {
            up.add(name);
            started.push(name);
            setups.set(name, result.setup);
          } else {
            failed.set(name, result.reason);
          }
        }
      }
    } catch (err) {
      this.#pending = null;
      // Nothing half-applied: what this activation started is let go again.
      await Promise.all(
        started.map((name) => this.#letGo(name, setups.get(name), "activation_failed").catch(() => {})),
      );
      throw err;
    }
  }

  /** Notices lost approvals: the affected extensions and their dependents drop out; nothing is added. */
  refresh(): void {
    if (this.closed) throw new TetherError(BrokerCode.closed, `Session '${this.id}' is closed`);
    this.#broker.approvals.notice();
    if (!this.#stale) return;
    // #set decides whether it is still stale (by the epoch read here); a read that throws leaves it so.
    const epoch = this.#broker.approvals.epoch;
    const known = knownExtensions(this.#broker);
    const before = new Set(this.#applied.plan.active);
    const plan = this.#plan(known, this.#applied.failed, this.#applied.setups, before);
    // Anything that was active and is not now: its status says why (the plan's reason); its satellite
    // stops. No close: an extension whose approval is gone is asked nothing more.
    const dropped = [...before].filter((name) => !plan.active.includes(name));
    this.#set({ ...this.#applied, plan, known, epoch });
    for (const name of dropped) void this.#scope.deactivate(name).catch(() => {});
  }

  /**
   * Applies the saved preferences (and approvals) to the live session. The new
   * set is booted beside the old one and swapped in at once; satellites of
   * extensions that stay active keep running (their loaders and preparation
   * are not asked again); those that leave are closed with `reloaded_out`.
   */
  async reload(): Promise<ReloadReport> {
    this.refresh();
    const before = new Set(this.#applied.plan.active);
    const previous = this.#applied.setups;
    let result: { applied: Applied; started: string[] };
    try {
      result = await this.activate(before, true);
    } catch (err) {
      throw new TetherError(
        BrokerCode.closed,
        `Reload of session '${this.id}' failed; the session is unchanged: ${(err as Error).message}`,
      );
    }
    const { applied } = result;
    const after = new Set(applied.plan.active);
    const deactivated = [...before].filter((name) => !after.has(name));
    const activated = applied.plan.active.filter((name) => !before.has(name));
    this.#set(applied);
    await Promise.all(deactivated.map((name) => this.#letGo(name, previous.get(name), "reloaded_out")));
    const failed = [...applied.failed].map(([name, reason]) => ({ name, reason }));
    return { activated, deactivated, failed, notes: this.takeNotes() };
  }

  /** Lets every active extension go (the session closes): managed ones are closed first, in parallel. */
  async letGoAll(reason: CloseReason, options: { abort?: boolean } = {}): Promise<void> {
    const { plan, setups } = this.#applied;
    await Promise.all(
      plan.active.map((name) =>
        this.#letGo(name, options.abort === true ? undefined : setups.get(name), reason, options),
      ),
    );
  }

  /** The composed context: every active extension's pieces in registry order, under the session's bound. */
  context(): ContextPiece[] {
    this.refresh();
    return [...this.#composed().pieces];
  }

  #composed() {
    const { plan, setups } = this.#applied;
    return composeContext(plan.active, (name) => setups.get(name)?.pieces ?? []);
  }

  /** Every extension the session knows of, active ones first in registry order, then the rest by name. */
  status(): ExtensionStatus[] {
    this.refresh();
    const { plan, known, setups } = this.#applied;
    const omitted = this.#composed().omitted;
    const row = (k: Known, state: ExtensionState, reason: string | null): ExtensionStatus => {
      const setup = state === "active" ? setups.get(k.name) : undefined;
      return {
        name: k.name,
        builtin: k.builtin,
        priority: k.priority,
        requires: k.requires,
        tools: k.tools,
        commands: k.commands,
        contexts: k.contexts,
        routes: k.routes,
        compactions: k.compactions,
        managed: k.managed,
        state,
        reason,
        preference: this.#preference(k),
        hooks: k.hooks.map((h) => h.event),
        matchers: Object.fromEntries(k.hooks.flatMap((h) => (h.match !== undefined ? [[h.event, h.match]] : []))),
        toolsOff: setup === undefined ? [] : k.tools.filter((t) => plan.tools.get(t) !== k.name),
        commandsOff: setup === undefined ? [] : k.commands.filter((c) => plan.commands.get(c) !== k.name),
        observes: setup?.observes ?? false,
        warnings: [...(setup?.warnings ?? []), ...(omitted.get(k.name) ?? [])],
      };
    };
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
    const { plan, known } = this.#applied;
    const out: { name: string; extension: string; description: string; parameters: Record<string, unknown> }[] = [];
    for (const name of plan.active) {
      for (const t of known.get(name)?.installed?.manifest.tool ?? []) {
        if (plan.tools.get(t.name) === name)
          out.push({ name: t.name, extension: name, description: t.description, parameters: t.parameters });
      }
    }
    return out;
  }

  /** The session's `/commands`, with the extension serving each. */
  commands(): SessionCommand[] {
    this.refresh();
    const { plan, known } = this.#applied;
    const out: SessionCommand[] = [];
    for (const name of plan.active) {
      for (const c of known.get(name)?.installed?.manifest.command ?? []) {
        if (plan.commands.get(c.name) === name)
          out.push({ name: c.name, extension: name, description: c.description, arguments: c.arguments });
      }
    }
    return out;
  }

  /**
   * The answer for a name no active extension serves: names the inactive one (or the preparation)
   * that would, and why.
   */
  notServed(what: "tool" | "command", name: string, served: string[]): Failure {
    const { plan, known, setups } = this.#applied;
    const shown = what === "command" ? `/${name}` : name;
    const owners = [...known.values()].filter((k) => (what === "tool" ? k.tools : k.commands).includes(name));
    // An active owner left it off (its preparation narrowed it); otherwise its owner is inactive.
    const narrowed = owners.find((k) => plan.active.includes(k.name));
    if (narrowed !== undefined) {
      const on = (what === "tool" ? setups.get(narrowed.name)?.tools : setups.get(narrowed.name)?.commands) ?? [];
      const list = on.map((n) => (what === "command" ? `/${n}` : n)).join(", ");
      return {
        ok: false,
        error: {
          code: BrokerCode.inactive,
          msg:
            `The ${what} '${shown}' of '${narrowed.name}' is off in this session: its preparation turned on only ` +
            `[${list}]`,
        },
      };
    }
    const owner = owners[0];
    if (owner !== undefined) {
      const reason = plan.inactive.get(owner.name) ?? "not active";
      return {
        ok: false,
        error: {
          code: BrokerCode.inactive,
          msg: `The ${what} '${shown}' belongs to '${owner.name}', which is inactive in this session: ${reason}`,
        },
      };
    }
    const list = served.sort().map((n) => (what === "command" ? `/${n}` : n));
    return {
      ok: false,
      error: { code: WireCode.unknownTool, msg: `Unknown ${what} '${name}'; this session serves [${list.join(", ")}]` },
    };
  }
}
