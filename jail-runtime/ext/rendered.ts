/**
 * `rendered()`: a conversation message (or any value a hook hands back) as
 * JSON text, or the reason it has none. Total: it never throws, and it never
 * renders a shape it cannot represent as `null` or `{}` the way JSON.stringify
 * silently does (undefined, functions, symbols, bigint, NaN, cycles, class
 * instances).
 */

import { jsonStringify } from "../cap/intrinsics.js";

export type Rendered = { readonly ok: true; readonly json: string } | { readonly ok: false; readonly error: string };

function at(path: string): string {
  return path === "" ? "the value" : `.${path}`;
}

function check(value: unknown, path: string, seen: Set<object>): string | null {
  switch (typeof value) {
    case "string":
    case "boolean":
      return null;
    case "number":
      return Number.isFinite(value) ? null : `${at(path)} is ${value}, which JSON cannot hold`;
    case "undefined":
      return `${at(path)} is undefined`;
    case "bigint":
      return `${at(path)} is a bigint`;
    case "function":
      return `${at(path)} is a function`;
    case "symbol":
      return `${at(path)} is a symbol`;
    case "object": {
      if (value === null) return null;
      if (seen.has(value)) return `${at(path)} refers back to itself`;
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          for (let i = 0; i < value.length; i++) {
            if (!(i in value)) return `${at(`${path}${path ? "." : ""}${i}`)} is a hole in the array`;
            const why = check(value[i], `${path}${path ? "." : ""}${i}`, seen);
            if (why !== null) return why;
          }
          return null;
        }
        const proto = Object.getPrototypeOf(value) as unknown;
        if (proto !== Object.prototype && proto !== null)
          return `${at(path)} is a ${(value as object).constructor?.name ?? "non-plain object"}, not plain data`;
        for (const key of Object.keys(value)) {
          const why = check((value as Record<string, unknown>)[key], `${path}${path ? "." : ""}${key}`, seen);
          if (why !== null) return why;
        }
        if (Object.getOwnPropertySymbols(value).length > 0) return `${at(path)} has symbol keys`;
        return null;
      } finally {
        seen.delete(value);
      }
    }
    default:
      return `${at(path)} cannot be rendered`;
  }
}

/**
 * Renders `value` as JSON text, or says which part cannot be.
 *
 * @example
 * ```ts
 * import { rendered } from "@tether/ext";
 * rendered({ role: "user", content: "hi" }); // { ok: true, json: '{"role":"user","content":"hi"}' }
 * rendered({ when: new Date() });              // { ok: false, error: ".when is a Date, not plain data" }
 * ```
 */
export function rendered(value: unknown): Rendered {
  const why = check(value, "", new Set());
  if (why !== null) return { ok: false, error: why };
  return { ok: true, json: jsonStringify(value) };
}
