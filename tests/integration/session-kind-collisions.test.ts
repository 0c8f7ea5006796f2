/**
 * A route name or a compaction strategy name has one owner per session, like
 * a tool: over real satellites, the later extension in registry order is
 * inactive as a whole (its tool answers `inactive` naming the earlier one),
 * an extension requiring it is inactive too, and the earlier extension and an
 * unrelated one keep working.
 */
import { rmSync } from "node:fs";
import type { Session } from "../../broker/sessions/session.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { writeExtensions } from "./support/write-extensions.js";

const STATUS_ROUTE = `
[[route]]
name = "status"
description = "Its status."
`;
const FOLD = `
[[compaction]]
name = "fold"
description = "Folds nothing."
`;
const TOOL = (name: string) => `
[[tool]]
name = "${name}"
description = "Says ${name}."
parameters = { type = "object", properties = {} }
`;
const code = (tool: string, extra: string) => `import { outcome, text, type Route, type Strategy } from "@tether/ext";
export const tools = { ${tool}: () => outcome([text("${tool}")]) };
${extra}
`;
const ROUTES = `const status: Route = () => "ok";\nexport const routes = { status };`;
const COMPACTIONS = `const fold: Strategy = () => ({ summary: "none", folds: [] });\nexport const compactions = { fold };`;

const EXTENSIONS = {
  // Registry order is priority, then name: "a-…" before "b-…".
  "a-router": { manifest: `${STATUS_ROUTE}${TOOL("a_tool")}`, code: code("a_tool", ROUTES) },
  "b-router": { manifest: `${STATUS_ROUTE}${TOOL("b_tool")}`, code: code("b_tool", ROUTES) },
  "b-router-user": { manifest: `requires = ["b-router"]\n${TOOL("user_tool")}`, code: code("user_tool", "") },
  "c-folder": { manifest: `${FOLD}${TOOL("c_tool")}`, code: code("c_tool", COMPACTIONS) },
  "d-folder": { manifest: `${FOLD}${TOOL("d_tool")}`, code: code("d_tool", COMPACTIONS) },
  plain: { manifest: TOOL("plain_tool"), code: code("plain_tool", "") },
} as const;

let fixtures: string;
let opened: HookSession;
let session: Session;

beforeAll(async () => {
  fixtures = writeExtensions("tether-collide-ext-", EXTENSIONS);
  opened = await openHookSession("tether-collide-", fixtures, Object.keys(EXTENSIONS), "collide-1");
  ({ session } = opened);
}, 240_000);

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

const state = (name: string) => {
  const row = session.status().find((s) => s.name === name)!;
  return [row.state, row.reason];
};

test("the later owner of a route name is inactive whole, naming the earlier; its dependent goes with it", () => {
  expect(state("a-router")).toEqual(["active", null]);
  expect(state("b-router")).toEqual([
    "inactive",
    "its route 'status' collides with 'a-router', which comes earlier in registry order",
  ]);
  expect(state("b-router-user")[0]).toBe("inactive");
  expect(state("b-router-user")[1]).toContain("b-router");
});

test("the later owner of a compaction strategy name is inactive whole, naming the earlier", () => {
  expect(state("c-folder")).toEqual(["active", null]);
  expect(state("d-folder")).toEqual([
    "inactive",
    "its compaction strategy 'fold' collides with 'c-folder', which comes earlier in registry order",
  ]);
});

test("the losers' tools answer inactive with the reason; the winners and an unrelated extension keep working", async () => {
  const lost = await session.callTool("b_tool", "{}");
  expect(lost.outcome).toMatchObject({ ok: false, error: { code: "inactive" } });
  expect(lost.outcome.ok ? "" : lost.outcome.error.msg).toContain("collides with 'a-router'");
  for (const tool of ["a_tool", "c_tool", "plain_tool"]) {
    expect((await session.callTool(tool, "{}")).outcome).toEqual({
      ok: true,
      value: { content: [{ type: "text", text: tool }], terminate: false },
    });
  }
  expect((await session.route("a-router", "status", "")).outcome).toEqual({ ok: true, response: "ok" });
  expect(session.routes().map((r) => `${r.extension}/${r.name}`)).toEqual(["a-router/status"]);
});
