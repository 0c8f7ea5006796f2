/**
 * The console's audit over real calls (jailed satellites through a library
 * session, `guard`'s tool_call hook traced): the ledger and the capability
 * audit filtered by extension, session, outcome, decision and time range,
 * paged; one call's page with its capability calls and hook traces; the
 * activity chart with calls, refusals and crashes per extension.
 */
import { Session } from "../../broker/sessions/session.js";
import { PAGE_SIZE } from "../../broker/store/audit-pages.js";
import { invocations } from "../../broker/store/schema.js";
import { ConsoleClient, startConsole, type ConsoleRig } from "./support/console-client.js";

let rig: ConsoleRig;
let client: ConsoleClient;
const ECHOES = PAGE_SIZE + 5;

/** The ids of the ledger rows a page lists, in its order. */
const ledgerIds = (html: string): number[] =>
  [...html.matchAll(/<tr data-invocation="(\d+)"/g)].map((m) => Number(m[1]));
const tableOf = (html: string, id: string): string =>
  new RegExp(`<table id="${id}">([^]*?)</table>`).exec(html)?.[1] ?? "";

beforeAll(async () => {
  rig = await startConsole("tether-console-audit-", async (broker) => {
    for (const name of ["echo", "weather", "misbehave", "guard"]) {
      await broker.registry.install(`manifests/${name}`);
      broker.registry.approve(name);
    }
  });
  const a = await Session.open(rig.broker, { id: "audit-a", workspace: rig.tmp });
  for (let i = 0; i < ECHOES; i++)
    expect((await a.callTool("echo", JSON.stringify({ text: `hello ${i}` }))).outcome.ok).toBe(true);
  // A refusal (the metadata address) and a crash (an answer that is not a tool outcome).
  await a.callTool("fetch_url", JSON.stringify({ url: "http://169.254.169.254/latest/meta-data/" }));
  expect((await a.callTool("bad_value", "{}")).outcome).toMatchObject({ ok: false, error: { code: "crashed" } });
  await a.close();
  const b = await Session.open(rig.broker, { id: "audit-b", workspace: rig.tmp });
  await b.callTool("echo", JSON.stringify({ text: "from b" }));
  await b.close();
  client = new ConsoleClient(rig.base);
  await client.login();
}, 180_000);

afterAll(async () => {
  await rig?.stop();
});

test("the first page lists the newest calls, with a link to the next", async () => {
  const page = await client.get("/console/audit");
  expect(page.status).toBe(200);
  expect(page.text).toMatch(/<form id="filters"/);
  const ids = ledgerIds(page.text);
  expect(ids).toHaveLength(PAGE_SIZE);
  expect(ids).toEqual([...ids].sort((x, y) => y - x));
  expect(page.text).toMatch(/<a id="next-page" href="\/console\/audit\?page=2">/);
  expect(page.text).not.toContain('id="prev-page"');
  expect(page.text).toMatch(new RegExp(`<a href="/console/audit/call/${ids[0]}">`));
  const second = await client.get("/console/audit?page=2");
  const rest = ledgerIds(second.text);
  expect(rest.length).toBeGreaterThan(0);
  expect(Math.max(...rest)).toBeLessThan(Math.min(...ids));
  expect(second.text).toMatch(/<a id="prev-page" href="\/console\/audit">/);
  const all = rig.broker.store.orm
    .select({ id: invocations.id })
    .from(invocations)
    .all()
    .map((r) => r.id);
  expect(new Set([...ids, ...rest, ...ledgerIds((await client.get("/console/audit?page=3")).text)])).toEqual(
    new Set(all),
  );
});

test("filters: extension, session, outcome, decision, time range; the paging links keep them", async () => {
  const misbehave = await client.get("/console/audit?extension=misbehave");
  const rows = rig.broker.store.orm.select().from(invocations).all();
  expect(ledgerIds(misbehave.text).sort()).toEqual(
    rows
      .filter((r) => r.extension === "misbehave")
      .map((r) => r.id)
      .sort(),
  );
  expect(tableOf(misbehave.text, "cap-audit")).not.toContain("<td>weather</td>");

  const crashed = await client.get("/console/audit?outcome=crashed");
  expect(ledgerIds(crashed.text)).toEqual(rows.filter((r) => r.outcome === "crashed").map((r) => r.id));
  expect(ledgerIds(crashed.text)).toHaveLength(1);

  const b = await client.get("/console/audit?session=audit-b");
  expect(ledgerIds(b.text)).toEqual(
    rows
      .filter((r) => r.sessionId === "audit-b")
      .map((r) => r.id)
      .sort((x, y) => y - x),
  );

  const denied = await client.get("/console/audit?decision=denied");
  const caps = tableOf(denied.text, "cap-audit");
  expect(caps).toContain('class="denied"');
  expect(caps).not.toContain('class="allowed"');
  expect(caps).toContain("169.254.169.254");

  const future = new Date(Date.now() + 86_400_000).toISOString().slice(0, 16);
  const none = await client.get(`/console/audit?from=${encodeURIComponent(future)}`);
  expect(ledgerIds(none.text)).toEqual([]);
  expect(tableOf(none.text, "cap-audit")).not.toContain("<tr data-cap");
  const past = await client.get(`/console/audit?to=${encodeURIComponent("2001-01-01T00:00")}`);
  expect(ledgerIds(past.text)).toEqual([]);
  const everything = await client.get(
    `/console/audit?from=2001-01-01T00:00&to=${encodeURIComponent(future)}&extension=echo`,
  );
  expect(ledgerIds(everything.text)).toHaveLength(PAGE_SIZE);
  expect(everything.text).toContain(
    `<a id="next-page" href="/console/audit?extension=echo&amp;from=2001-01-01T00%3A00&amp;to=${encodeURIComponent(future)}&amp;page=2">`,
  );

  const bad = await client.get("/console/audit?from=yesterday-ish&decision=maybe");
  expect(bad.status).toBe(200);
  expect(bad.text).toContain("from 'yesterday-ish': expected a date");
  expect(bad.text).toContain("decision 'maybe': expected allowed or denied");
});

test("a call's page: the invocation, its capability calls, and the hook traces about it", async () => {
  const rows = rig.broker.store.orm.select().from(invocations).all();
  const fetch = rows.find((r) => r.name === "fetch_url")!;
  const page = await client.get(`/console/audit/call/${fetch.id}`);
  expect(page.status).toBe(200);
  expect(page.text).toContain(`Call ${fetch.id}: weather tool fetch_url`);
  expect(tableOf(page.text, "cap-audit")).toContain("169.254.169.254");
  const traces = tableOf(page.text, "hook-traces");
  // guard's tool_call hook was asked about this call, and its own cap_call hook about the fetch.
  expect(traces).toMatch(/<td>tool_call<\/td><td class="mono">fetch_url<\/td><td>guard/);
});

test("the chart: calls, refusals and crashes over time, one row per extension", async () => {
  const page = await client.get("/console/audit");
  const svg = /<svg id="activity"[^]*?<\/svg>/.exec(page.text)?.[0] ?? "";
  expect(svg).toContain('<g class="series" data-extension="echo">');
  expect(svg).toContain('<g class="series" data-extension="weather">');
  const series = (name: string) =>
    new RegExp(`<g class="series" data-extension="${name}">([^]*?)</g>`).exec(svg)?.[1] ?? "";
  expect(series("echo")).toMatch(/<rect class="calls"[^>]*><title>\d+ calls from /);
  expect(series("weather")).toMatch(/<rect class="refusals"[^>]*><title>1 refusal from /);
  expect(series("misbehave")).toMatch(/<rect class="crashes"[^>]*><title>1 crash from /);
  const total = [...series("echo").matchAll(/<rect class="calls"[^>]*><title>(\d+) calls? from/g)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  expect(total).toBe(ECHOES + 1);
});
