/**
 * `make demo`'s search part: two example extensions with search providers
 * (manifests/web-search: `web` and `archive`; manifests/docs-search: `notes`,
 * a `research` tool that asks the session's providers through the `search`
 * capability, and a route that lists them) installed and approved like the
 * others, then a session preference that ranks two providers and excludes
 * one, a merged search, the capability from a tool, and a route's view.
 */
import { join } from "node:path";
import { textOf } from "../base/outcome.js";
import type { Broker } from "../broker.js";
import type { Session } from "../sessions/session.js";

const SEARCH_EXTENSIONS = ["web-search", "docs-search"];

export async function searchDemo(
  broker: Broker,
  session: Session,
  repo: string,
  step: (title: string) => void,
): Promise<void> {
  step("Search providers: installed and approved, active in the session, ranked by its preference");
  for (const name of SEARCH_EXTENSIONS) {
    const { installed, status } = await broker.registry.install(join(repo, "manifests", name));
    broker.registry.approve(name, { by: "demo" });
    console.log(`  ${installed.name} ${installed.version}: ${status}, approved`);
  }
  await session.reload();
  const list = () =>
    session
      .searchProviders()
      .providers.map((p) => `${p.name} (${p.extension})`)
      .join(", ");
  console.log(`  providers, registry order: ${list()}`);
  session.preferSearch({ rank: ["notes", "web"], exclude: ["archive"] });
  const ranked = session.searchProviders();
  console.log(`  preferSearch({rank: [notes, web], exclude: [archive]}) → ${list()}; excluded: ${ranked.excluded}`);

  const report = await session.search("deno permissions", { limit: 5 });
  console.log(`  search "deno permissions" (every provider asked, merged round-robin in rank order):`);
  for (const r of report.results)
    console.log(`    [${r.provider}] ${r.title}${r.url !== undefined ? ` ${r.url}` : ""}`);
  for (const p of report.providers) {
    const how = p.ok ? `${p.results} result${p.results === 1 ? "" : "s"}` : p.error.msg;
    console.log(`    ${p.name}: ${how}`);
  }

  const researched = await session.callTool("research", JSON.stringify({ question: "tether capabilities" }));
  console.log("  tool research → the search capability (docs-search's own provider is not asked from its own call):");
  for (const line of textOf(researched.outcome).split("\n")) console.log(`    ${line}`);
  const sources = await session.route("docs-search", "sources", "");
  const shown = sources.outcome.ok ? sources.outcome.response : sources.outcome.error.msg;
  console.log(`  route docs-search/sources (its payload's providers) → ${shown}`);
  session.preferSearch(null);
}
