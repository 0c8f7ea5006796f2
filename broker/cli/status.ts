/**
 * `tether status`'s text: the overview and the fleet part as the command
 * prints them (what they hold is broker/operator/status.ts's).
 */
import type { FleetView, Overview } from "../operator/status.js";

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
          : `; db ${st.db_bytes ?? 0} of ${st.db_quota} ` +
            `bytes${st.migrations ? `, ${st.migrations} migration${st.migrations === 1 ? "" : "s"} applied` : ""}`;
      lines.push(`${"".padEnd(width)}  storage: kv ${st.kv_bytes} of ${st.kv_quota} bytes${db}`);
    }
    if (e.init !== null) lines.push(`${"".padEnd(width)}  ${e.init}`);
  }
  lines.push("");
  lines.push(
    `daemon scope: eligible ${o.daemon.eligible.length === 0 ? "none" : o.daemon.eligible.join(", ")}; ` +
      `running in this process: ${o.daemon.running.length === 0 ? "none" : o.daemon.running.join(", ")} ` +
      `(daemon satellites run in tether serve and the library, booted at a provider's first completion)`,
  );
  return lines.join("\n");
}

export function renderFleet(fleet: FleetView, now: number): string {
  const lines = [`fleet: ${fleet.store}, ${fleet.hosts.length} host${fleet.hosts.length === 1 ? "" : "s"}`];
  if (fleet.trustedKeys !== undefined)
    lines.push(
      `  this home trusts ${fleet.trustedKeys} operator key${fleet.trustedKeys === 1 ? "" : "s"}` +
        (fleet.trustedKeys === 0 ? ": every approval from the fleet is refused (tether key trust <key>)" : ""),
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
      `  ${h.name.padEnd(width)}  ${seen}${silent}, ${h.version}, ` +
        `clock ${h.clockSkewMs >= 0 ? "+" : ""}${h.clockSkewMs} ms; ${sessions}`,
    );
  }
  return lines.join("\n");
}
