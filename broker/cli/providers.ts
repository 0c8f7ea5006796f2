/**
 * `tether providers`: the model providers served now (from extensions enabled
 * globally), each with its models, windows and prices; a session's ranking
 * when one is named; what is declared but not served and why; and the daemon
 * scope (which extensions may run daemon satellites, which run here).
 */
import type { Broker } from "../broker.js";
import type { ProvidersView } from "../providers/view.js";

export function providersOutput(broker: Broker, session: string | undefined): ProvidersView {
  return broker.providers(session);
}

const dollars = (n: number) => `$${n}`;

export function renderProviders(view: ProvidersView, session: string | undefined): string {
  const lines: string[] = [];
  const pref = view.preference;
  const ranked =
    session === undefined
      ? ""
      : pref === null
        ? `; session '${session}' has no preference`
        : `; as session '${session}' ranks them (rank: ` +
          `[${pref.rank.join(", ")}], exclude: [${pref.exclude.join(", ")}])`;
  lines.push(
    view.providers.length === 0
      ? `No provider is served (an extension serves its [[provider]] ` +
          `rows once it is approved and enabled globally)${ranked}`
      : `Providers served now, first preferred first${ranked}:`,
  );
  for (const p of view.providers) {
    lines.push(`  ${p.name} (${p.extension}) — ${p.description}`);
    if (p.base_url !== "") lines.push(`      api: ${p.base_url}${p.secret !== null ? ` (secret '${p.secret}')` : ""}`);
    const width = Math.max(...p.models.map((m) => m.id.length));
    for (const m of p.models) {
      const caps = m.capabilities.length > 0 ? `   ${m.capabilities.join(", ")}` : "";
      lines.push(
        `      ${m.id.padEnd(width)}   ${String(m.context_window).padStart(9)} ` +
          `tokens   ${dollars(m.input_price_per_mtok)} / ${dollars(m.output_price_per_mtok)} per million in/out${caps}`,
      );
    }
  }
  if (view.excluded.length > 0) lines.push(`Excluded by session '${session}': ${view.excluded.join(", ")}`);
  for (const note of view.notes) lines.push(`note: ${note}`);
  if (view.unavailable.length > 0) {
    lines.push("Not served:");
    for (const u of view.unavailable) lines.push(`  ${u.provider} (${u.extension}): ${u.reason}`);
  }
  const d = view.daemon;
  lines.push(
    `Daemon scope (${d.scope}): eligible: ${d.eligible.length === 0 ? "none" : d.eligible.join(", ")}; ` +
      `running in this process: ${d.running.length === 0 ? "none" : d.running.join(", ")}`,
  );
  return lines.join("\n");
}
