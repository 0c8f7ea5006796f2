/**
 * Host routes over real jailed satellites (`session.route`): a route answers
 * in the session's context (its id and active set); an unknown route and an
 * inactive extension's route are answered with why; a `route_call` hook asked
 * first may block it; a request past 1 MiB is refused before anything runs; a
 * route that throws is `crashed`, naming the error and nothing of the broker.
 * Every call that reached the bus is in the ledger (kind `route`) and the trace.
 * Extensions: written to a temporary folder by this suite.
 */
import { rmSync } from "node:fs";
import type { Broker } from "../../broker/broker.js";
import type { Session } from "../../broker/sessions/session.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { writeExtensions } from "./support/write-extensions.js";

const EXTENSIONS = {
  router: {
    manifest: `
[[route]]
name = "ping"
description = "Answers pong with the session it was asked in."

[[route]]
name = "boom"
description = "Throws."
`,
    code: `import type { Route } from "@tether/ext";
export const tools = {};
const ping: Route = (request, session) => \`pong \${request} from \${session.session_id}; active: \${session.active.join(",")}; workspace set: \${session.workspace.length > 0}\`;
const boom: Route = () => {
  throw new Error("kaput");
};
export const routes = { ping, boom };
`,
  },
  guard: {
    manifest: `
[[hook]]
event = "route_call"
`,
    code: `import { hook } from "@tether/ext";
export const tools = {};
export const hooks = {
  route_call: hook("route_call", (p) =>
    p.request.includes("forbidden") ? { block: \`guard refuses \${p.extension}/\${p.route}\` } : { notes: [\`guard saw \${p.route} (\${p.request.length} chars, cut: \${p.truncated})\`] },
  ),
};
`,
  },
  sleepy: {
    manifest: `
[[route]]
name = "nap"
description = "Never asked: its extension is off in the session."
`,
    code: `import type { Route } from "@tether/ext";
export const tools = {};
const nap: Route = () => "zzz";
export const routes = { nap };
`,
  },
} as const;

let fixtures: string;
let opened: HookSession;
let broker: Broker;
let session: Session;

/** The ledger's route rows of this session: [extension, name, outcome]. */
function ledger(): [string, string, string][] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select extension, name, outcome from invocations where session_id = ? and kind = 'route' order by id")
    .all(session.id) as { extension: string; name: string; outcome: string }[];
  return rows.map((r) => [r.extension, r.name, r.outcome]);
}

/** The route_call trace: [hook extension, subject, answer, detail]. */
function traces(): [string, string, string, string][] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare(
      "select extension, subject, answer, detail from hook_traces where session_id = ? and event = 'route_call' order by id",
    )
    .all(session.id) as { extension: string; subject: string; answer: string; detail: string }[];
  return rows.map((r) => [r.extension, r.subject, r.answer, r.detail]);
}

beforeAll(async () => {
  fixtures = writeExtensions("tether-routes-ext-", EXTENSIONS);
  opened = await openHookSession("tether-routes-", fixtures, ["router", "guard", "sleepy"], "routes-1");
  ({ broker, session } = opened);
  session.prefer("sleepy", false);
  await session.reload();
});

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

test("the session lists the routes of its active extensions, in registry order", () => {
  expect(session.routes()).toEqual([
    { name: "ping", extension: "router", description: "Answers pong with the session it was asked in." },
    { name: "boom", extension: "router", description: "Throws." },
  ]);
});

test("a route answers in the session's context: its id, its active set; the guard was asked first", async () => {
  const report = await session.route("router", "ping", "hello");
  expect(report.outcome).toEqual({
    ok: true,
    response: "pong hello from routes-1; active: guard,router; workspace set: true",
  });
  expect(report.notes).toEqual(["guard saw ping (5 chars, cut: false)"]);
  expect(report.trace.map((t) => [t.extension, t.answer])).toEqual([["guard", "notes"]]);
  expect(report.invocationId).not.toBeNull();
  expect(ledger()).toEqual([["router", "ping", "ok"]]);
  expect(traces()).toEqual([["guard", "router/ping", "notes", "guard saw ping (5 chars, cut: false)"]]);
});

test("a route_call hook blocks the call: the route does not run, the ledger says blocked", async () => {
  const report = await session.route("router", "ping", "something forbidden");
  expect(report.outcome).toEqual({
    ok: false,
    error: { code: "blocked", msg: "Blocked by 'guard': guard refuses router/ping" },
  });
  expect(report.blockedBy).toBe("guard");
  expect(ledger().at(-1)).toEqual(["router", "ping", "blocked"]);
  expect(traces().at(-1)).toEqual(["guard", "router/ping", "block", "guard refuses router/ping"]);
});

test("an unknown route, or a route of an extension that is not installed, is unknown_tool naming what the session serves", async () => {
  const before = ledger().length;
  for (const [extension, route] of [
    ["router", "nope"],
    ["ghost", "ping"],
  ] as const) {
    const report = await session.route(extension, route, "x");
    expect(report.outcome).toEqual({
      ok: false,
      error: {
        code: "unknown_tool",
        msg: `Unknown route '${extension}/${route}'; this session serves [router/boom, router/ping]`,
      },
    });
  }
  expect(ledger()).toHaveLength(before);
});

test("an inactive extension's route is inactive, with the reason", async () => {
  const report = await session.route("sleepy", "nap", "x");
  expect(report.outcome).toEqual({
    ok: false,
    error: {
      code: "inactive",
      msg: "The route 'nap' belongs to 'sleepy', which is inactive in this session: disabled in this session",
    },
  });
  expect(ledger().some(([extension]) => extension === "sleepy")).toBe(false);
});

test("a request past 1 MiB is refused before any hook or satellite sees it; the guard is shown at most 64 Ki characters", async () => {
  const tracesBefore = traces().length;
  const huge = await session.route("router", "ping", "x".repeat(1024 * 1024 + 1));
  expect(huge.outcome).toEqual({
    ok: false,
    error: {
      code: "bad_arguments",
      msg: "The request to route 'router/ping' is 1048577 bytes; a route's request may hold at most 1048576 bytes (1 MiB)",
    },
  });
  expect(traces()).toHaveLength(tracesBefore);
  const big = await session.route("router", "ping", "y".repeat(100_000));
  expect(big.outcome.ok).toBe(true);
  expect(big.notes).toEqual(["guard saw ping (65536 chars, cut: true)"]);
});

test("a route that throws is crashed: the error's name and message, nothing of the broker's", async () => {
  const report = await session.route("router", "boom", "x");
  expect(report.outcome).toEqual({ ok: false, error: { code: "crashed", msg: "Error: kaput" } });
  expect(ledger().at(-1)).toEqual(["router", "boom", "crashed"]);
  // The satellite keeps serving.
  expect((await session.route("router", "ping", "again")).outcome).toMatchObject({ ok: true });
});
