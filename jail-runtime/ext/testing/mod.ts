/**
 * The author SDK's test kit, `@tether/ext/testing`: run a tool, hook or
 * command (or an initializer, a service, …) with no socket and no broker,
 * against in-memory `kv`, a scriptable `net`, an in-memory SQLite `db`
 * (`FakeDb`), and recorders for `log` and `report`. For tests only: an install
 * refuses an extension whose bundle imports it.
 *
 * @example
 * ```ts
 * import { decodeArgs, outcome, text, v, type Tool } from "@tether/ext";
 * import { assertEquals, testKit } from "@tether/ext/testing";
 *
 * const tools: Record<string, Tool> = {
 *   greet: (args, ctx) => {
 *     const { name } = decodeArgs(v.object({ name: v.string() }), args);
 *     ctx.report(`greeting ${name}`);
 *     return outcome([text(`Hello, ${name}`)]);
 *   },
 * };
 * const kit = testKit({ tools });
 * assertEquals(await kit.tool("greet", { name: "Ada" }), {
 *   ok: true,
 *   value: { content: [{ type: "text", text: "Hello, Ada" }], terminate: false },
 * });
 * assertEquals(kit.reports, ["greeting Ada"]);
 * ```
 */
export {
  testKit,
  type CallOptions,
  type Extension,
  type KitOptions,
  type ServiceRequestInput,
  type TestKit,
} from "./kit.js";
export { FakeDb, DEFAULT_DB_BYTES, type FakeDbOptions, type Row } from "./db.js";
export { FakeKv, DEFAULT_KV_BYTES } from "./kv.js";
export {
  FakeNet,
  type FakeRequest,
  type Refuse,
  type Respond,
  type Route,
  type RouteAnswer,
  type Routes,
  type Unreachable,
} from "./net.js";
export { FakeSearch, type FakeProvider, type FakeQuery, type FakeSearchOptions } from "./search.js";
export {
  FakeActs,
  type FakeAct,
  type FakeActResultVerdict,
  type FakeActVerdict,
  type FakeActsOptions,
} from "./acts.js";
export { FakeModel, type FakeModelOptions, type ModelAnswer } from "./model.js";
export type { LogLine } from "./stand-in.js";
export { assertEquals } from "./assert.js";
