/**
 * Grants: what an extension may do, as requested by its manifest and as an
 * operator approved it (an approval may be narrower, never wider).
 */
import * as v from "valibot";
import { Limits, type Manifest } from "../install/manifest.js";
import { capabilitiesOf } from "../install/search-row.js";
import { ModelGrant, modelGrant, modelItems, modelLimits } from "../install/model-table.js";

/** One approved secret: which rules' requests carry it, in which header or query parameter, written how. */
export const SecretBinding = v.object({
  name: v.string(),
  rules: v.array(v.string()),
  header: v.optional(v.string()),
  query: v.optional(v.string()),
  format: v.string(),
});
export type SecretBinding = v.InferOutput<typeof SecretBinding>;

export const Grants = v.object({
  net: v.array(v.string()),
  tools: v.array(v.string()),
  hooks: v.array(v.string()),
  commands: v.array(v.string()),
  // The session-facing kinds; an approval made before they existed granted none.
  contexts: v.optional(v.array(v.string()), []),
  routes: v.optional(v.array(v.string()), []),
  compactions: v.optional(v.array(v.string()), []),
  managed: v.optional(v.boolean(), false),
  observe: v.optional(v.array(v.string()), []),
  // The secrets the broker may inject, each bound to rules and a place; an approval made before them granted none.
  secrets: v.optional(v.array(SecretBinding), []),
  /** Model providers (`[[provider]]`), by name: each is handed the completions harnesses ask of it. */
  providers: v.optional(v.array(v.string()), []),
  /** HTTP services (`[[service]]`), each as `name METHODS path`: a new method or path widens. */
  services: v.optional(v.array(v.string()), []),
  /** Search providers (`[[search]]`), by name; absent in an approval that granted none. */
  searches: v.optional(v.array(v.string())),
  /** Capabilities beyond the common ones (`[capabilities]`: `search`); absent in an approval that granted none. */
  capabilities: v.optional(v.array(v.string())),
  /** Acts it may report to the session's hooks (`[[act]]`), by name; absent in an approval that granted none. */
  acts: v.optional(v.array(v.string())),
  /**
   * The kinds added beside the built-ins (`[[<kind>]]` rows), per kind the names granted; an
   * approval made before them granted none.
   */
  kinds: v.optional(v.record(v.string(), v.array(v.string()))),
  // Defaults fill limits an older approval did not record.
  limits: Limits,
  /** `[storage]`: the database's quota, or null for none; an approval made before it granted none. */
  storage: v.optional(v.nullable(v.object({ max_bytes: v.number() })), null),
  /** `[model]`: its own model calls and their token budget; absent in an approval that granted none. */
  model: v.optional(ModelGrant),
});
export type Grants = v.InferOutput<typeof Grants>;

/** How a `[[service]]` row is granted: its name, methods and path, so a new method or path asks again. */
export function serviceGrant(row: Manifest["service"][number]): string {
  return `${row.name} ${[...row.methods].sort().join(",")} ${row.path}`;
}

/** What the manifest asks for. */
export function requestedGrants(manifest: Manifest): Grants {
  return {
    net: [...manifest.net.allow],
    tools: manifest.tool.map((t) => t.name).sort(),
    hooks: manifest.hook.map((h) => h.event).sort(),
    commands: manifest.command.map((c) => c.name).sort(),
    contexts: manifest.context.map((c) => c.name).sort(),
    routes: manifest.route.map((r) => r.name).sort(),
    compactions: manifest.compaction.map((c) => c.name).sort(),
    managed: manifest.managed !== undefined,
    observe: [...(manifest.observe?.events ?? [])].sort(),
    secrets: manifest.secret.map((s) => ({
      name: s.name,
      rules: [...s.rules],
      ...(s.header !== undefined ? { header: s.header } : { query: s.query! }),
      format: s.format,
    })),
    providers: manifest.provider.map((p) => p.name).sort(),
    services: manifest.service.map(serviceGrant).sort(),
    // Only when declared: the grants of an extension without them stay as they were written.
    ...(manifest.search.length > 0 ? { searches: manifest.search.map((r) => r.name).sort() } : {}),
    ...(capabilitiesOf(manifest.capabilities).length > 0
      ? { capabilities: capabilitiesOf(manifest.capabilities) }
      : {}),
    ...(manifest.act.length > 0 ? { acts: manifest.act.map((r) => r.name).sort() } : {}),
    // Only a manifest with added kinds' sections has this field: other grants stay as they were written.
    ...(manifest.kinds === undefined
      ? {}
      : {
          kinds: Object.fromEntries(
            Object.entries(manifest.kinds).map(([kind, k]) => [kind, k.rows.map((r) => r.name).sort()]),
          ),
        }),
    limits: {
      memory_mb: manifest.limits.memory_mb,
      deadline_ms: manifest.limits.deadline_ms,
      idle_s: manifest.limits.idle_s,
      kv_bytes: manifest.limits.kv_bytes,
      fetches: manifest.limits.fetches,
      concurrency: manifest.limits.concurrency,
      ...(manifest.limits.satellites !== undefined && manifest.limits.satellites !== 1
        ? { satellites: manifest.limits.satellites }
        : {}),
    },
    storage: manifest.storage === undefined ? null : { max_bytes: manifest.storage.max_bytes },
    ...(manifest.model !== undefined ? { model: modelGrant(manifest.model)! } : {}),
  };
}

export function parseGrants(json: string): Grants {
  return v.parse(Grants, JSON.parse(json));
}

export interface GrantDiff {
  readonly addedNet: string[];
  readonly removedNet: string[];
  readonly addedTools: string[];
  readonly removedTools: string[];
  readonly addedHooks: string[];
  readonly removedHooks: string[];
  readonly addedCommands: string[];
  readonly removedCommands: string[];
  /**
   * The session-facing kinds and providers, each as `kind name` (`context notes`, `route status`,
   * `compaction folds`, `managed`, `observe turn`, `provider openai`).
   */
  readonly addedSession: string[];
  readonly removedSession: string[];
  /** Secret bindings, one `name → rule as place` each: a new secret or a new rule or place for one widens. */
  readonly addedSecrets: string[];
  readonly removedSecrets: string[];
  /** Limits raised: [name, approved, requested]. */
  readonly raisedLimits: Array<[string, number, number]>;
  readonly loweredLimits: Array<[string, number, number]>;
}

const minus = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x));

/** How `requested` differs from what was `approved`. */
export function diffGrants(approved: Grants, requested: Grants): GrantDiff {
  const raised: Array<[string, number, number]> = [];
  const lowered: Array<[string, number, number]> = [];
  for (const key of Object.keys(requested.limits) as Array<keyof Grants["limits"]>) {
    // An absent `satellites` is 1, like every other limit's default.
    const was = approved.limits[key] ?? 1;
    const now = requested.limits[key] ?? 1;
    if (now > was) raised.push([key, was, now]);
    if (now < was) lowered.push([key, was, now]);
  }
  // A database, or a larger one, widens like a raised limit (none approved counts as 0 bytes).
  const dbWas = approved.storage?.max_bytes ?? 0;
  const dbNow = requested.storage?.max_bytes ?? 0;
  if (dbNow > dbWas) raised.push(["storage.max_bytes", dbWas, dbNow]);
  if (dbNow < dbWas) lowered.push(["storage.max_bytes", dbWas, dbNow]);
  // A model budget, or a larger one, widens the same way (./model-table.ts).
  const modelWas = new Map(modelLimits(approved.model));
  for (const [key, now] of modelLimits(requested.model)) {
    const was = modelWas.get(key) ?? 0;
    if (now > was) raised.push([key, was, now]);
    if (now < was) lowered.push([key, was, now]);
  }
  return {
    addedNet: minus(requested.net, approved.net),
    removedNet: minus(approved.net, requested.net),
    addedTools: minus(requested.tools, approved.tools),
    removedTools: minus(approved.tools, requested.tools),
    addedHooks: minus(requested.hooks, approved.hooks),
    removedHooks: minus(approved.hooks, requested.hooks),
    addedCommands: minus(requested.commands, approved.commands),
    removedCommands: minus(approved.commands, requested.commands),
    addedSession: minus(sessionItems(requested), sessionItems(approved)),
    removedSession: minus(sessionItems(approved), sessionItems(requested)),
    addedSecrets: minus(secretItems(requested), secretItems(approved)),
    removedSecrets: minus(secretItems(approved), secretItems(requested)),
    raisedLimits: raised,
    loweredLimits: lowered,
  };
}

/** The session-facing kinds a grant holds, one `kind name` item each. */
export function sessionItems(g: Grants): string[] {
  return [
    ...g.contexts.map((n) => `context ${n}`),
    ...g.routes.map((n) => `route ${n}`),
    ...g.compactions.map((n) => `compaction ${n}`),
    ...(g.managed ? ["managed"] : []),
    ...g.observe.map((n) => `observe ${n}`),
    // A new provider widens: it is handed whole conversations (its models are catalog data, not grants).
    ...g.providers.map((n) => `provider ${n}`),
    ...g.services.map((n) => `service ${n}`),
    // A search provider is handed a session's queries; a capability is one more thing it may reach.
    ...(g.searches ?? []).map((n) => `search ${n}`),
    ...(g.capabilities ?? []).map((n) => `capability ${n}`),
    // A reported act is one more thing it does that the session's hooks are shown.
    ...(g.acts ?? []).map((n) => `act ${n}`),
    // Model calls of its own, and each provider it may send them to (`*`: any).
    ...modelItems(g.model),
    // An added kind's rows widen as a built-in's do: each is one more thing it may be asked.
    ...Object.entries(g.kinds ?? {})
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .flatMap(([kind, names]) => names.map((n) => `${kind} ${n}`)),
  ];
}

/** Where a secret goes, its value shown as `…`: `Authorization: Bearer …` or `?api_key=…`. */
export function secretPlace(b: SecretBinding): string {
  const shown = b.format.replace("{}", "…");
  return b.header !== undefined ? `${b.header}: ${shown}` : `?${b.query ?? ""}=${shown}`;
}

/** A grant's secret bindings, one `name → rule as place` item per rule. */
export function secretItems(g: Grants): string[] {
  return g.secrets.flatMap((b) => b.rules.map((rule) => `${b.name} → ${rule} as ${secretPlace(b)}`));
}

/** True when the diff asks for anything the approval did not grant. */
export function widens(diff: GrantDiff): boolean {
  return (
    diff.addedNet.length +
      diff.addedTools.length +
      diff.addedHooks.length +
      diff.addedCommands.length +
      diff.addedSession.length +
      diff.addedSecrets.length +
      diff.raisedLimits.length >
    0
  );
}
