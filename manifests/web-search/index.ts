import type { SearchProvider, SearchResult } from "@tether/ext";

const PAGES: readonly SearchResult[] = [
  { title: "Deno permissions", url: "https://docs.example/deno/permissions", snippet: "--allow-net and friends" },
  { title: "Bubblewrap sandboxing", url: "https://docs.example/bwrap", snippet: "unprivileged namespaces" },
  { title: "Tether capabilities", url: "https://docs.example/tether/caps", snippet: "judged per call, audited" },
];

/** The pages whose title or snippet has every word of the query, best (most words in the title) first. */
function matching(pages: readonly SearchResult[], query: string, limit: number): SearchResult[] {
  const words = query
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "");
  const hits = pages
    .map((page) => {
      const text = `${page.title} ${page.snippet ?? ""}`.toLowerCase();
      const title = page.title.toLowerCase();
      const found = words.filter((w) => text.includes(w)).length;
      return { page, found, score: words.filter((w) => title.includes(w)).length };
    })
    .filter((hit) => hit.found > 0);
  return hits
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map((hit) => ({ ...hit.page, score: hit.score }));
}

const web: SearchProvider = (query, options) => matching(PAGES, query, options.limit);
const archive: SearchProvider = (query, options) =>
  matching(PAGES, query, options.limit).map((page) => ({ ...page, title: `${page.title} (archived 2019)` }));

export const tools = {};
export const search = { web, archive };
