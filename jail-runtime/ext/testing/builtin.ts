interface Builtins {
  getBuiltinModule?(id: string): unknown;
}

/**
 * A built-in module, loaded synchronously (Deno and Node both have
 * `process.getBuiltinModule`; the SDK compiles without their types). `who`
 * names what needs it, for the error.
 */
export function builtin<T>(id: string, who: string): T {
  const loaded = (globalThis as { process?: Builtins }).process?.getBuiltinModule?.(id);
  if (loaded === undefined) throw new Error(`${who} needs ${id}: run the tests under Deno 2 (deno test)`);
  return loaded as T;
}
