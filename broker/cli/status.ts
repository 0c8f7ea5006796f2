/**
 * `tether status`: the broker at a glance, read from the home (nothing
 * boots): each installed extension with its approval and what it serves
 * where — in sessions, or in the daemon scope (model providers) — then each
 * credential it uses: operator-set secrets (set or not) and sign-ins (signed
 * in, when it expires), then the storage it uses against its quotas (kv and
 * skv together, and its `[storage]` database), and its initializer's state
 * (`[init]`). Never a value.
 */
import type { Refusal } from "../fleet-trust/judge-approvals.js";
import type { Broker } from "../broker.js";
import type { HostView } from "../store/pg/hosts.js";
import { loginsOf } from "../login/logins.js";
import { initState } from "../init/init-lines.js";
import { dbSize } from "../store/ext-db.js";
import { kvRepository } from "../store/kv-repository.js";
import { secretStatus } from "./secret.js";

export interface ExtensionOverview {
  readonly name: string;
  readonly version: string;
  readonly status: string;
  /** What it serves in sessions: tools, hooks, commands and the session-facing kinds, as counts. */
  readonly session: string;
  /** The providers it serves in the daemon scope (from globally enabled extensions only). */
  readonly daemon: readonly string[];
  readonly credentials: readonly { readonly secret: string; readonly state: string }[];
  /** Bytes used and the manifest's quotas: kv and skv together, and the `[storage]` database (null: none declared, or no file yet). */
  readonly storage: {
    readonly kv_bytes: number;
    readonly kv_quota: number;
    readonly db_bytes: number | null;
    readonly db_quota: number | null;
    readonly migrations: number | null;
  };
  /** Its initializer's state (`[init]`): `init: done for <version> at <time>`, `init failed: <reason>`, `init: not run yet`; null without one. */
  readonly init: string | null;
}

export interface Overview {
  readonly extensions: readonly ExtensionOverview[];
  readonly daemon: { readonly eligible: readonly string[]; readonly running: readonly string[] };
}

const count = (n: number, one: string) => (n === 0 ? "" : `${n} ${one}${n === 1 ? "" : "s"}`);

/** `kvUsed`: each extension's kv and skv bytes, when they are not this home's (a fleet's host). */
export function overview(broker: Broker, kvUsed?: ReadonlyMap<string, number>): Overview {
  const registry = broker.registry;
  const providers = broker.providers();
  const logins = loginsOf(broker).status();
  const kv = kvRepository(broker.store);
  const extensions = registry.list().map((installed): ExtensionOverview => {
    const m = installed.manifest;
    const session = [
      count(m.tool.length, "tool"),
      count(m.hook.length, "hook"),
      count(m.command.length, "command"),
      count(m.context.length, "context loader"),
      count(m.route.length, "route"),
      count(m.compaction.length, "compaction strategy").replace("strategys", "strategies"),
      m.managed !== undefined ? "managed" : "",
      m.observe !== undefined ? "observer" : "",
    ].filter((part) => part !== "");
    const isSet = secretStatus(broker.home, m.name);
    const credentials = m.secret.map((secret) => {
      const login = logins.find((l) => l.extension === m.name && l.secret === secret.name);
      if (login !== undefined) {
        const state =
          login.problem ??
          (login.signed_in
            ? `signed in (${login.login})${login.expires_in !== null ? `, expires in ${login.expires_in} s` : ""}`
            : `not signed in: tether login ${m.name} ${login.login}`);
        return { secret: secret.name, state };
      }
      const set = isSet(secret.name);
      return {
        secret: secret.name,
        state: set === true ? "set" : set === false ? `NOT SET: tether secret set ${m.name} ${secret.name}` : set,
      };
    });
    return {
      name: m.name,
      version: m.version,
      status: registry.status(installed),
      session: session.length === 0 ? "nothing in sessions" : session.join(", "),
      daemon: providers.providers.filter((p) => p.extension === m.name).map((p) => p.name),
      credentials,
      storage: {
        kv_bytes: kvUsed?.get(m.name) ?? kv.used(m.name),
        kv_quota: m.limits.kv_bytes,
        db_bytes: dbSize(broker.home, m.name),
        db_quota: m.storage?.max_bytes ?? null,
        migrations: m.storage === undefined ? null : broker.registry.appliedCount(m.name),
      },
      init: initState(broker, installed),
    };
  });
  return { extensions, daemon: { eligible: providers.daemon.eligible, running: providers.daemon.running } };
}

export function renderOverview(o: Overview): string {
  if (o.extensions.length === 0) return "no extensions installed (tether install <folder>)";
  const width = Math.max(...o.extensions.map((e) => e.name.length));
  const lines: string[] = [];
  for (const e of o.extensions) {
    lines.push(`${e.name.padEnd(width)}  ${e.version.padEnd(8)} ${e.status.padEnd(9)} sessions: ${e.session}`);
    if (e.daemon.length > 0) lines.push(`${"".padEnd(width)}  daemon: providers ${e.daemon.join(", ")}`);
    for (const c of e.credentials) lines.push(`${"".padEnd(width)}  secret ${c.secret}: ${c.state}`);
    // Shown once it uses any: an extension that stores nothing gets no line.
    const st = e.storage;
    if (st.kv_bytes > 0 || st.db_quota !== null) {
      const db =
        st.db_quota === null
          ? ""
          : `; db ${st.db_bytes ?? 0} of ${st.db_quota} bytes${st.migrations ? `, ${st.migrations} migration${st.migrations === 1 ? "" : "s"} applied` : ""}`;
      lines.push(`${"".padEnd(width)}  storage: kv ${st.kv_bytes} of ${st.kv_quota} bytes${db}`);
    }
    if (e.init !== null) lines.push(`${"".padEnd(width)}  ${e.init}`);
  }
  lines.push("");
  lines.push(
    `daemon scope: eligible ${o.daemon.eligible.length === 0 ? "none" : o.daemon.eligible.join(", ")}; running in this process: ${o.daemon.running.length === 0 ? "none" : o.daemon.running.join(", ")} (daemon satellites run in tether serve and the library, booted at a provider's first completion)`,
  );
  return lines.join("\n");
}

/** The fleet part of `tether status`: each host, when it was last seen, and the sessions it serves now. */
export interface FleetView {
  readonly store: string;
  readonly hosts: readonly HostView[];
  /** The fleet's approval rows this home refuses: no trusted operator's signature over them. */
  readonly refused?: readonly Refusal[];
  /** Public keys this home trusts (how many). */
  readonly trustedKeys?: number;
  /** A host whose row is older than this (its beat plus this home's staleness bound) is shown as silent. */
  readonly silentAfterMs?: number;
}

export function renderFleet(fleet: FleetView, now: number): string {
  const lines = [`fleet: ${fleet.store}, ${fleet.hosts.length} host${fleet.hosts.length === 1 ? "" : "s"}`];
  if (fleet.trustedKeys !== undefined)
    lines.push(
      `  this home trusts ${fleet.trustedKeys} operator key${fleet.trustedKeys === 1 ? "" : "s"}${fleet.trustedKeys === 0 ? ": every approval from the fleet is refused (tether key trust <key>)" : ""}`,
    );
  for (const r of fleet.refused ?? [])
    lines.push(`  refused: approval #${r.id} of '${r.extension}': ${r.why} (docs/fleet.md#the-trust-model)`);
  const width = Math.max(0, ...fleet.hosts.map((h) => h.name.length));
  for (const h of fleet.hosts) {
    const seen = h.seenAt === 0 ? "never recorded" : `seen ${Math.max(0, Math.round((now - h.seenAt) / 1000))} s ago`;
    const sessions =
      h.sessions.length === 0
        ? "no sessions"
        : `sessions: ${h.sessions.map((s) => `${s.id} (process ${s.process})`).join(", ")}`;
    // Its own staleness a cut-off host cannot write: past its beat and the bound, it has stopped or refuses every call.
    const silent =
      fleet.silentAfterMs !== undefined && h.seenAt > 0 && now - h.seenAt > fleet.silentAfterMs
        ? " — silent past the staleness bound: stopped, or cut off from the store and refusing every call"
        : "";
    lines.push(
      `  ${h.name.padEnd(width)}  ${seen}${silent}, ${h.version}, clock ${h.clockSkewMs >= 0 ? "+" : ""}${h.clockSkewMs} ms; ${sessions}`,
    );
  }
  return lines.join("\n");
}
