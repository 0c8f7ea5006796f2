/**
 * undici, loaded the first time a brokered request or a sign-in needs it:
 * it is the largest package the broker imports (~100 ms of a command's
 * start-up here), and most commands, sessions and `tether mcp` servers never
 * make a request.
 */
type Undici = typeof import("undici");

let loading: Promise<Undici> | null = null;

export function undici(): Promise<Undici> {
  // undici is CommonJS: Node's import() gives its exports by name and as `default`, the command's bundle
  // (scripts/bundle-cli.mjs) only as `default` — so they are read from there.
  loading ??= import("undici").then((m) => (m as Undici & { default?: Undici }).default ?? m);
  return loading;
}
