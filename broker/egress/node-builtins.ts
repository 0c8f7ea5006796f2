/**
 * The Node built-ins the egress matcher uses, loaded through a specifier no
 * type checker follows. The matcher also runs in the SDK's test kit under
 * Deno (jail-runtime/ext/testing/egress.ts), and Deno's type check of a graph
 * that names a `node:` module needs @types/node in the extension's own
 * node_modules, which an extension folder does not have. Node and Deno both
 * provide these modules at run time.
 */
interface Builtins {
  "node:url": { domainToASCII(domain: string): string };
  "node:net": { isIPv6(input: string): boolean };
  "node:module": { createRequire(path: string | URL): (id: string) => unknown };
}

async function builtin<K extends keyof Builtins>(id: K): Promise<Builtins[K]> {
  const specifier: string = id;
  return (await import(specifier)) as Builtins[K];
}

export const { domainToASCII } = await builtin("node:url");
export const { isIPv6 } = await builtin("node:net");
export const { createRequire } = await builtin("node:module");
