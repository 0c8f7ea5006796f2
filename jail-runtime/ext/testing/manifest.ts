/**
 * What the kit reads of an extension's manifest.toml: its `name` and its
 * `[net] allow` rules, so that `net.fetch` is judged as the broker judges it.
 * By default the manifest beside the test module (`Deno.mainModule`), when
 * there is one and the test may read it (`deno test --allow-read`).
 */
import { parse } from "smol-toml";
import { builtin } from "./builtin.js";

/** The parts of a manifest the kit uses. */
export interface KitManifest {
  /** Where it was read (a path), for messages. */
  readonly source: string;
  readonly name?: string;
  readonly allow: readonly string[];
}

interface Fs {
  existsSync(path: string | URL): boolean;
  readFileSync(path: string | URL, encoding: "utf8"): string;
}
interface DenoLike {
  readonly mainModule?: string;
  readonly permissions?: { querySync?(d: { name: "read"; path: string | URL }): { state: string } };
}

const fs = (): Fs => builtin<Fs>("node:fs", "testKit's manifest option");
const pathOf = (where: string | URL) => (where instanceof URL ? decodeURIComponent(where.pathname) : where);

/** Reads a manifest.toml (a path, or a `file:` URL); throws an error saying what to change. */
export function readManifest(where: string | URL): KitManifest {
  const source = pathOf(where);
  let text: string;
  try {
    text = fs().readFileSync(where, "utf8");
  } catch (err) {
    throw new Error(
      `testKit: cannot read the manifest ${source} (${(err as Error).message}): give its path or ` +
        `new URL("./manifest.toml", import.meta.url), and run deno test with --allow-read for it`,
    );
  }
  let toml: Record<string, unknown>;
  try {
    toml = parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`testKit: ${source} is not valid TOML: ${(err as Error).message}`);
  }
  const net = toml["net"] as { allow?: unknown } | undefined;
  const allow = net?.allow ?? [];
  if (!Array.isArray(allow) || !allow.every((rule) => typeof rule === "string"))
    throw new Error(`testKit: ${source}: [net] allow must be a list of rules (strings), as the broker reads it`);
  const name = typeof toml["name"] === "string" ? toml["name"] : undefined;
  return { source, allow, ...(name !== undefined ? { name } : {}) };
}

/**
 * The manifest beside the test module: read, or why it was not (the test may
 * not read it), or null when there is none (or no test module).
 */
export function manifestBesideTest(): KitManifest | { readonly unread: string } | null {
  const deno = (globalThis as { Deno?: DenoLike }).Deno;
  if (deno?.mainModule === undefined || !deno.mainModule.startsWith("file:")) return null;
  const url = new URL("./manifest.toml", deno.mainModule);
  const state = deno.permissions?.querySync?.({ name: "read", path: url }).state;
  if (state !== "granted")
    return {
      unread:
        `testKit could not read ${pathOf(url)} (deno test has no read permission for it), so net.fetch is ` +
        "answered by routes alone, not judged against its [net] allow rules as the broker judges it: " +
        "run deno test with --allow-read, or pass { manifest: false } to say routes alone are meant",
    };
  return fs().existsSync(url) ? readManifest(url) : null;
}
