/**
 * The broker at a glance (`tether status`), read from the home (nothing
 * boots): each installed extension with its approval and what it serves
 * where — in sessions, or in the daemon scope (model providers) — then each
 * credential it uses: operator-set secrets (set or not) and sign-ins (signed
 * in, when it expires), then the storage it uses against its quotas (kv and
 * skv together, and its `[storage]` database), and its initializer's state
 * (`[init]`); on a fleet's host, the fleet's hosts too. Never a value.
 */
import type { Refusal } from "../fleet-trust/judge-approvals.js";
import type { HostView } from "../store/pg/hosts.js";
import { loginsOf } from "../login/logins.js";
import { initState } from "../init/init-lines.js";
import type { ProvidersView } from "../providers/view.js";
import { dbSize } from "../store/ext-db.js";
import { kvRepository } from "../store/kv-repository.js";
import type { KernelHost } from "../kernel/host.js";
import { secretStatus } from "./secret-status.js";

/**
 * What status reads of the broker: the kernel's host (the sign-ins are kept
 * one set per host, login/logins.ts) and the providers' view.
 */
export type StatusHost = KernelHost & { providers(): ProvidersView };

export interface ExtensionOverview {
  readonly name: string;
  readonly version: string;
  readonly status: string;
  /** What it serves in sessions: tools, hooks, commands and the session-facing kinds, as counts. */
  readonly session: string;
  /** The providers it serves in the daemon scope (from globally enabled extensions only). */
  readonly daemon: readonly string[];
  readonly credentials: readonly { readonly secret: string; readonly state: string }[];
  /**
   * Bytes used and the manifest's quotas: kv and skv together, and
   * the `[storage]` database (null: none declared, or no file yet).
   */
  readonly storage: {
    readonly kv_bytes: number;
    readonly kv_quota: number;
    readonly db_bytes: number | null;
    readonly db_quota: number | null;
    readonly migrations: number | null;
  };
  /**
   * Its initializer's state (`[init]`): `init: done for <version> at <time>`,
   * `init failed: <reason>`, `init: not run yet`; null without one.
   */
  readonly init: string | null;
}

export interface Overview {
  readonly extensions: readonly ExtensionOverview[];
  readonly daemon: { readonly eligible: readonly string[]; readonly running: readonly string[] };
}

const count = (n: number, one: string) => (n === 0 ? "" : `${n} ${one}${n === 1 ? "" : "s"}`);

/** `kvUsed`: each extension's kv and skv bytes, when they are not this home's (a fleet's host). */
export function overview(host: StatusHost, kvUsed?: ReadonlyMap<string, number>): Overview {
  const registry = host.registry;
  const providers = host.providers();
  const logins = loginsOf(host).status();
  const kv = kvRepository(host.store);
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
    const isSet = secretStatus(host.home, m.name);
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
        db_bytes: dbSize(host.home, m.name),
        db_quota: m.storage?.max_bytes ?? null,
        migrations: m.storage === undefined ? null : host.registry.appliedCount(m.name),
      },
      init: initState(host, installed),
    };
  });
  return { extensions, daemon: { eligible: providers.daemon.eligible, running: providers.daemon.running } };
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

/** What a fleet's host knows of its fleet, for status. */
export interface FleetStatusSource {
  /** The store's URL as shown (no password). */
  readonly shown: string;
  readonly kv: { used(extension: string): Promise<number> };
  hosts(): Promise<HostView[]>;
  readonly refused: readonly Refusal[];
  readonly stalenessBoundMs: number;
}

/**
 * The overview on a fleet's host (the keys are the fleet's)
 * and the fleet part: its hosts, the sessions each serves now.
 */
export async function fleetStatus(
  host: StatusHost,
  member: FleetStatusSource,
): Promise<{ overview: Overview; fleet: FleetView }> {
  const used = new Map(
    await Promise.all(host.registry.list().map(async (i) => [i.name, await member.kv.used(i.name)] as const)),
  );
  const o = overview(host, used);
  // The fleet's side, loaded on a fleet's host only.
  const { trustedKeys } = await import("../fleet-trust/operator-keys.js");
  const { SEEN_EVERY_MS } = await import("../store/pg/hosts.js");
  const fleet = {
    store: member.shown,
    hosts: await member.hosts(),
    refused: member.refused,
    trustedKeys: trustedKeys(host.home).length,
    silentAfterMs: SEEN_EVERY_MS + member.stalenessBoundMs,
  };
  return { overview: o, fleet };
}
