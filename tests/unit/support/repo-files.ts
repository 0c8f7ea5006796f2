/** The repository's own source files, as the structure tests scan them. */
import { readdirSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Repo-relative paths (with `/`) of every .ts file under `dir`, sorted. */
export function sourcesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string): void => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const path = join(abs, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) out.push(relative(REPO, path).split(sep).join("/"));
    }
  };
  walk(join(REPO, dir));
  return out.sort();
}
