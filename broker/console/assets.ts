/**
 * The console's only asset: its stylesheet, served under a name holding its
 * content's hash (`/console/assets/console-<hash>.css`), so a page always
 * names the bytes it was made with. Nothing is fetched from anywhere else.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export const ASSETS_PREFIX = "/console/assets/";

export interface Asset {
  readonly path: string;
  readonly type: string;
  readonly body: Buffer;
}

function hashed(file: string, ext: string, type: string): Asset {
  const body = readFileSync(new URL(`./assets/${file}.${ext}`, import.meta.url));
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 16);
  return { path: `${ASSETS_PREFIX}${file}-${hash}.${ext}`, type, body };
}

let stylesheet: Asset | null = null;

/** The stylesheet (read once). */
export function css(): Asset {
  stylesheet ??= hashed("console", "css", "text/css; charset=utf-8");
  return stylesheet;
}

/** The asset at `path`, or null. */
export function assetAt(path: string): Asset | null {
  const sheet = css();
  return path === sheet.path ? sheet : null;
}
