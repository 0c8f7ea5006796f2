/**
 * `assertEquals`: deep equality for plain data, so an extension's `deno test`
 * needs nothing fetched (no `jsr:@std/assert`; `node:assert` would need
 * `@types/node` to type-check).
 */

function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, i) => x === b[i]);
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b, k) && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

function show(value: unknown): string {
  try {
    return (
      JSON.stringify(value, (_k, x: unknown) => (x instanceof Uint8Array ? `Uint8Array(${[...x].join(",")})` : x), 2) ??
      String(value)
    );
  } catch {
    return String(value);
  }
}

/**
 * Throws unless `actual` deeply equals `expected` (fields that are `undefined` count as absent).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@tether/ext/testing";
 * assertEquals({ ok: true, value: [1, 2] }, { ok: true, value: [1, 2] });
 * ```
 */
export function assertEquals(actual: unknown, expected: unknown, message?: string): void {
  if (same(actual, expected)) return;
  throw new Error(`${message ?? "values differ"}\nexpected: ${show(expected)}\nactual:   ${show(actual)}`);
}
