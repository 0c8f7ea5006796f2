/**
 * Ajv, loaded at its first use rather than with the modules that use it: only
 * an install, a manifest check and a tool call's argument check need it, and
 * loading it was ~20 ms of every `tether list` here (40–60 ms of importing the
 * library from dist/, where it comes from node_modules file by file). A
 * session starts loading it as its satellites start booting (`preloadAjv`),
 * so its first call finds it loaded; what needs it before a preload has
 * finished requires it on the spot.
 */
import { createRequire } from "node:module";

export type AjvClass = typeof import("ajv").Ajv;

let loaded: AjvClass | null = null;
let loading: Promise<void> | null = null;

/** Whether Ajv is loaded (`ajvClass` then costs nothing). */
export function ajvLoaded(): boolean {
  return loaded !== null;
}

/** The Ajv class: the preloaded one, else required now (ajv is CommonJS: the class is its exports' `Ajv`). */
export function ajvClass(): AjvClass {
  loaded ??= (createRequire(import.meta.url)("ajv") as { Ajv: AjvClass }).Ajv;
  return loaded;
}

/**
 * Starts loading Ajv without blocking: through `import()`, which the command's
 * bundle turns into a chunk of its own. Settles when it is loaded; never rejects
 * (a failure leaves `ajvClass` to require it, and to throw there).
 */
export function preloadAjv(): Promise<void> {
  // ajv is CommonJS: Node's import() gives its exports by name and as `default`, the command's bundle only as
  // `default` — read from there (its exports are the class, with the class again as `Ajv`).
  type Exports = { default: { Ajv: AjvClass } };
  if (loading === null) {
    const imported = import("ajv").then((m) => (m as unknown as Exports).default.Ajv);
    loading = imported.then(
      (ajv) => {
        // Anything but the class (a package that changed its exports) leaves ajvClass to require it.
        if (typeof ajv === "function") loaded ??= ajv;
      },
      () => {},
    );
  }
  return loading;
}
