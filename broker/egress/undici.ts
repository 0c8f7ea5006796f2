/**
 * undici, loaded the first time a brokered request or a sign-in needs it:
 * it is the largest package the broker imports (~100 ms of a command's
 * start-up here), and most commands, sessions and `tether mcp` servers never
 * make a request.
 */
type Undici = typeof import("undici");

let loading: Promise<Undici> | null = null;

export function undici(): Promise<Undici> {
  loading ??= import("undici");
  return loading;
}
