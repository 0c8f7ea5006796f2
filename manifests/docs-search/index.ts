import { search as searching } from "@tether/cap";
import { decodeArgs, outcome, text, v, type Route, type SearchProvider, type Tool } from "@tether/ext";

const NOTES = [
  { title: "ADR 7: run extensions in Deno under bubblewrap", snippet: "capabilities only through the broker" },
  { title: "Release checklist", snippet: "run make demo before tagging" },
];

const notes: SearchProvider = (query, options) => {
  const q = query.toLowerCase();
  return NOTES.filter((n) => `${n.title} ${n.snippet}`.toLowerCase().includes(q.split(/\s+/)[0] ?? "")).slice(
    0,
    options.limit,
  );
};

const research: Tool = async (args) => {
  const { question } = decodeArgs(v.object({ question: v.pipe(v.string(), v.minLength(1)) }), args);
  const { results, notes: said } = await searching.query(question, { limit: 4 });
  const lines = results.map((r) => `- ${r.title} [${r.provider}]${r.url !== undefined ? ` ${r.url}` : ""}`);
  return outcome([text([...lines, ...said.map((n) => `(note: ${n})`)].join("\n") || "nothing found")]);
};

const sources: Route = (_request, session) => JSON.stringify(session.search.map((p) => p.name));

export const tools = { research };
export const search = { notes };
export const routes = { sources };
