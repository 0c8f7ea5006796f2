/**
 * The console's live sessions: the serve server's own, opened by a client
 * over the WebSocket API with jailed satellites behind them — each listed with
 * its active extensions and why the others are not (flaky fails to boot,
 * flaky-digest needs it), then reloaded and closed from the page, each after
 * its confirmation, as session.reload and session.close would.
 */
import { WebSocket } from "ws";
import {
  ConsoleClient,
  TOKEN,
  registryRows,
  startConsole,
  type ConsoleRig,
  rpcOver,
} from "./support/console-client.js";

let rig: ConsoleRig;
let ws: WebSocket;
let client: ConsoleClient;
const rpc = (method: string, params: unknown) => rpcOver(ws, method, params);

const rowOf = (html: string, id: string): string =>
  new RegExp(`<tr data-session="${id}">([^]*?)</tr>`).exec(html)?.[1] ?? "";

beforeAll(async () => {
  rig = await startConsole("tether-console-sessions-", async (broker) => {
    for (const name of ["echo", "flaky", "flaky-digest"]) {
      await broker.registry.install(`manifests/${name}`);
      broker.registry.approve(name);
    }
  });
  ws = new WebSocket(rig.ws, { headers: { Authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  for (const id of ["live-1", "live-2"])
    expect((await rpc("session.open", { id, workspace: rig.tmp }))["result"]).toMatchObject({ id });
  client = new ConsoleClient(rig.base);
  await client.login();
}, 120_000);

afterAll(async () => {
  ws?.close();
  await rig?.stop();
});

test("each live session with its active extensions and the reason for each inactive one", async () => {
  const page = await client.get("/console/sessions");
  expect(page.status).toBe(200);
  expect(page.text).toMatch(/<table id="sessions"/);
  const row = rowOf(page.text, "live-1");
  expect(row).toContain('<div data-active="echo">echo</div>');
  expect(row).toMatch(
    /<div data-inactive="flaky"><strong>flaky<\/strong> \(inactive\): <span class="reason">[^<]*missing configuration/,
  );
  expect(row).toMatch(
    /<div data-inactive="flaky-digest"><strong>flaky-digest<\/strong> \(inactive\): <span class="reason">[^<]*flaky/,
  );
  expect(row).toMatch(/<form class="reload inline" method="post" action="\/console\/sessions\/live-1\/reload">/);
  expect(row).toMatch(/<form class="close inline" method="post" action="\/console\/sessions\/live-1\/close">/);
  expect(rowOf(page.text, "live-2")).toContain('data-active="echo"');
});

test("reload: a confirmation, then the session reloaded, and the page says what it did", async () => {
  const confirm = await client.post("/console/sessions/live-1/reload");
  expect(confirm.status).toBe(200);
  expect(confirm.text).toContain('<section id="confirm">');
  expect(confirm.text).toContain("Reload session live-1?");
  expect(confirm.text).toMatch(/<form id="confirm-form"[^>]*action="\/console\/sessions\/live-1\/reload"/);
  const done = await client.post("/console/sessions/live-1/reload", { confirm: "yes" });
  expect(done.status).toBe(303);
  expect(done.headers.get("location")).toBe("/console/sessions");
  const page = await client.get("/console/sessions");
  expect(page.text).toMatch(/<p id="flash" role="status">reloaded session live-1: [^<]*still inactive: [^<]*flaky/);
  expect((await rpc("session.status", { session: "live-1" }))["result"]).toEqual(
    expect.arrayContaining([expect.objectContaining({ name: "echo", state: "active" })]),
  );
});

test("close: a confirmation, then the session gone from the server (a client is told it is unknown), the other still open", async () => {
  const before = registryRows(rig.broker);
  const confirm = await client.post("/console/sessions/live-1/close");
  expect(confirm.text).toContain("Close session live-1?");
  expect((await rpc("session.status", { session: "live-1" }))["result"]).toBeDefined();
  const done = await client.post("/console/sessions/live-1/close", { confirm: "yes" });
  expect(done.status).toBe(303);
  const page = await client.get("/console/sessions");
  expect(page.text).toContain("closed session live-1");
  expect(page.text).not.toContain('data-session="live-1"');
  expect(page.text).toContain('data-session="live-2"');
  expect((await rpc("session.status", { session: "live-1" }))["error"]).toMatchObject({
    data: { code: "unknown_session" },
  });
  expect(registryRows(rig.broker)).toBe(before);
  const again = await client.post("/console/sessions/live-1/close", { confirm: "yes" });
  expect(again.status).toBe(404);
});
