/**
 * A hostile extension author against the console, in a real Chromium: one
 * extension whose every free text — its description, each tool's description
 * and JSON-Schema parameters (keys and values), commands', contributions',
 * services', providers' and secrets' descriptions, its egress rules, its
 * migration's SQL, the path of a source file it imports and the lines of that
 * file (shown as a diff after an upgrade) — carries a payload set; the
 * ledger, the capability audit and the hook traces hold the payloads in every
 * text column (targets, rules, outcomes, answers, details, session ids); a
 * harness's live session has a payload for a workspace; the audit's filters
 * are given payloads on the query string, and a payload path is asked for.
 *
 * Each page that shows them (list, review with its diff, approve, revoke and
 * uninstall confirmations, audit, a call, sessions and a session's
 * confirmation, a 404) is rendered in Chromium and the DOM checked: no
 * element, attribute, script or style came from a payload (every tag and
 * attribute is one the console writes itself; no `on*`, no `style`), no
 * script ran, no CSP violation was reported, every link and form stays under
 * /console/, and the payload is on the page as text, with control characters
 * and bidirectional overrides written out.
 */
import { afterAll, beforeAll, expect, test } from "@jest/globals";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { WebSocket } from "ws";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { capAudit, hookTraces, invocations } from "../../broker/store/schema.js";
import { envOptions } from "../support/env-options.js";
import { useBrowser } from "../support/browser.js";

const TOKEN = "console-hostile-token-0123456789abcdef";
const browser = useBrowser();

/** The payload set: markup, attribute breakers, a script URL, CSS, controls and bidi, a long run. `N` is the field's number. */
const PAYLOADS = [
  `<b data-pwn="N">tagN</b>`,
  `"><img src=x data-pwn="N" onerror="window.__pwned=N">`,
  `'><svg onload="window.__pwned=N" data-pwn="N">`,
  `javascript:window.__pwned=N`,
  `</title></textarea></pre></code><script>window.__pwned=N</script>`,
  `<style>body{display:none}</style><div style="display:none" data-pwn="N">`,
  `ctl\u001b[2J\u0008\rN bidi\u202eN\u2066 zw\u200bN`,
];
/** Each field gets every payload, numbered so a hit names its field. */
let fieldNo = 0;
const fields: string[] = [];
function hostile(): string {
  fieldNo += 1;
  const n = fieldNo;
  const text = PAYLOADS.map((p) => p.replace(/N/g, String(n))).join(" ");
  fields.push(text);
  return text;
}
const toml = (s: string) => JSON.stringify(s);
/** A JSON value as a TOML inline value (keys quoted). */
const tomlValue = (x: unknown): string =>
  typeof x === "string"
    ? toml(x)
    : Array.isArray(x)
      ? `[${x.map(tomlValue).join(", ")}]`
      : typeof x === "object" && x !== null
        ? `{ ${Object.entries(x)
            .map(([k, v]) => `${toml(k)} = ${tomlValue(v)}`)
            .join(", ")} }`
        : String(x);

let tmp: string;
let broker: Broker;
let server: ServeServer;
let consoleUrl: string;
let wsUrl: string;
let invocationId: number;
/** The numbers of the fields 1.1.0 (the version installed) carries. */
const v2Fields: number[] = [];
const shownAs = (text: string) =>
  text.replace(
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
const workspaceName = `ws"'><b data-pwn="ws">w</b>\u202e`;

function writeHostile(dir: string, version: string, moduleLines: string): void {
  mkdirSync(join(dir, "migrations"), { recursive: true });
  const params = {
    type: "object",
    description: hostile(),
    properties: { [hostile()]: { type: "string", description: hostile(), default: hostile() } },
  };
  const manifest = [
    `name = "hostile"`,
    `version = "${version}"`,
    `description = ${toml(hostile())}`,
    `entry = "index.ts"`,
    `[[tool]]`,
    `name = "look"`,
    `description = ${toml(hostile())}`,
    `parameters = ${tomlValue(params)}`,
    `[[command]]`,
    `name = "cmd"`,
    `description = ${toml(hostile())}`,
    `[[context]]`,
    `name = "ctx"`,
    `description = ${toml(hostile())}`,
    `[[service]]`,
    `name = "svc"`,
    `description = ${toml(hostile())}`,
    `methods = ["GET"]`,
    `path = "/x"`,
    `[net]`,
    `allow = [${toml(`GET https://api.example.com/${encodeURIComponent("'\"><b data-pwn=rule>")}`)}, ${toml("GET https://*.example.org/in")}]`,
    `[[secret]]`,
    `name = "key"`,
    `description = ${toml(hostile())}`,
    `rules = [${toml("GET https://*.example.org/in")}]`,
    `header = "x-key"`,
    `[storage]`,
    `[limits]`,
    `memory_mb = 64`,
    `idle_s = 0`,
    ``,
  ].join("\n");
  writeFileSync(join(dir, "manifest.toml"), manifest);
  writeFileSync(
    join(dir, "migrations", "0001_init.sql"),
    `-- ${hostile()}\nCREATE TABLE t (x TEXT); -- ${hostile()}\n`,
  );
  const weird = `m'"<b data-pwn=path>\u202e.ts`;
  writeFileSync(join(dir, weird), `${moduleLines}\nexport const k = 1;\n`);
  writeFileSync(
    join(dir, "index.ts"),
    `import { k } from ${JSON.stringify(`./${weird}`)};\nexport const tools = { look: () => String(k) };\nexport const commands = { cmd: () => "" };\nexport const contexts = { ctx: () => "" };\nexport const services = { svc: () => ({ status: 200 }) };\n`,
  );
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-console-hostile-"));
  const home = join(tmp, "home");
  broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }), extensionLogs: false });
  writeFileSync(join(home, "policy.toml"), "");
  const v1 = join(tmp, "src", "v1");
  writeHostile(v1, "1.0.0", `export const a = ${JSON.stringify(hostile())};`);
  await broker.registry.install(v1);
  broker.registry.approve("hostile", { all: true, by: hostile().slice(0, 200) });
  const v2 = join(tmp, "src", "v2");
  const first = fieldNo + 1;
  writeHostile(
    v2,
    "1.1.0",
    `export const a = ${JSON.stringify(hostile())};\nexport const b = ${JSON.stringify(hostile())};`,
  );
  await broker.registry.install(v2);
  for (let n = first; n <= fieldNo; n += 1) v2Fields.push(n);

  // The ledger, the audit and the hook traces, every text column hostile.
  const now = Date.now();
  const orm = broker.store.orm;
  invocationId = 900_001;
  orm
    .insert(invocations)
    .values({
      id: invocationId,
      sessionId: hostile(),
      extension: "hostile",
      kind: "tool",
      name: hostile(),
      strand: hostile(),
      startedAt: now - 1000,
      finishedAt: now,
      durationMs: 1000,
      outcome: hostile(),
    })
    .run();
  orm
    .insert(invocations)
    .values({
      id: invocationId + 1,
      sessionId: "s",
      extension: hostile(),
      kind: "tool",
      name: "x",
      startedAt: now - 900,
      finishedAt: now,
      durationMs: 5,
      outcome: "crashed",
    })
    .run();
  orm
    .insert(capAudit)
    .values({
      invocationId,
      sessionId: hostile(),
      extension: hostile(),
      capability: hostile(),
      target: hostile(),
      decision: "denied",
      rule: hostile(),
      bytes: 0,
      secret: hostile(),
      at: now - 500,
    })
    .run();
  orm
    .insert(hookTraces)
    .values({
      sessionId: "s",
      event: "tool_call",
      subject: hostile(),
      aboutInvocationId: invocationId,
      hookInvocationId: invocationId + 1,
      extension: hostile(),
      answer: hostile(),
      detail: hostile(),
      durationMs: 1.5,
      at: now - 400,
    })
    .run();

  server = new ServeServer({ broker, token: TOKEN, log: createLogger({ level: "error" }), say: () => {} });
  const { url } = await server.listen({ port: 0 });
  consoleUrl = `http://127.0.0.1:${new URL(url).port}/console`;
  wsUrl = url;
  mkdirSync(join(tmp, workspaceName), { recursive: true });
  const ws = new WebSocket(wsUrl, { headers: { Authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const answer = new Promise<unknown>((resolve) =>
    ws.once("message", (data: Buffer) => resolve(JSON.parse(data.toString("utf8")))),
  );
  ws.send(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "session.open",
      params: { id: "hostile-ws", workspace: join(tmp, workspaceName) },
    }),
  );
  expect(await answer).toMatchObject({ result: expect.anything() });
  ws.close();
});

afterAll(async () => {
  await server?.shutdown(Promise.resolve());
  await broker?.destroy().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
});

/** What the console writes itself: every other tag or attribute came from a payload. */
const TAGS =
  "html head meta title link body header span nav a form input button main p h1 h2 table thead tbody tr th td div ul li code pre details summary label select option section strong br svg g text line rect".split(
    " ",
  );
const ATTRS =
  "open lang charset name content rel href class id method action type value checked selected role placeholder xmlns viewbox aria-label x y x1 y1 x2 y2 width height text-anchor".split(
    " ",
  );
const DATA =
  "data-path data-extension data-status data-rule data-tool data-cap data-invocation data-trace data-session data-active data-inactive".split(
    " ",
  );

/** The DOM's injected parts, if any; what the checks found. */
async function inspect(page: Page) {
  return page.evaluate(
    ({ tags, attrs }) => {
      const strange: string[] = [];
      for (const el of Array.from(document.querySelectorAll("*"))) {
        const tag = el.tagName.toLowerCase();
        if (!tags.includes(tag)) strange.push(`<${tag}>`);
        for (const a of Array.from(el.attributes))
          if (!attrs.includes(a.name.toLowerCase())) strange.push(`${tag}[${a.name}]`);
      }
      const links = Array.from(document.querySelectorAll("a[href], form[action], link[href]")).map(
        (el) => el.getAttribute("href") ?? el.getAttribute("action") ?? "",
      );
      const offsite = links.filter(
        (l) => !new URL(l, location.href).href.startsWith(`${location.origin}/console/`) || !l.startsWith("/console"),
      );
      const w = window as unknown as { __pwned?: unknown; __violations?: string[] };
      return {
        strange,
        offsite,
        pwned: w.__pwned ?? null,
        violations: w.__violations ?? [],
        text: document.body.innerText,
      };
    },
    { tags: TAGS, attrs: [...ATTRS, ...DATA] },
  );
}

/** Checks a page: nothing injected, and `needles` shown as text. */
async function expectClean(page: Page, where: string, needles: readonly string[]) {
  const found = await inspect(page);
  expect([where, found.strange, found.offsite, found.pwned, found.violations]).toEqual([where, [], [], null, []]);
  for (const needle of needles) expect([where, needle, found.text.includes(needle)]).toEqual([where, needle, true]);
  return found.text;
}

test("every extension-written text, on every page that shows it, stays text", async () => {
  const context = browser.context();
  await context.addInitScript(() => {
    const w = window as unknown as { __violations: string[] };
    w.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      w.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  const page = await browser.page();
  await page.goto(`${consoleUrl}/login`);
  await page.fill("input[name=token]", TOKEN);
  await page.fill("input[name=operator]", "op");
  await Promise.all([page.waitForURL(`${consoleUrl}/`), page.click("form#login button[type=submit]")]);

  // Written out as text: the markup, and the controls and overrides as \u{…}.
  const markup = ['<b data-pwn="', "javascript:window.__pwned=", "<script>window.__pwned=", "\\u{1b}[2J", "\\u{202e}"];
  await expectClean(page, "list", markup);

  await page.goto(`${consoleUrl}/ext/hostile`);
  // Open every <details> (the tools' schemas, the source diffs) so their text counts as shown.
  await page.evaluate(() => document.querySelectorAll("details").forEach((d) => d.setAttribute("open", "")));
  const review = await expectClean(page, "review", markup);
  // Every hostile field of 1.1.0's manifest, its migration and its source change is on the review, as text.
  const missing = v2Fields.filter((n) => !review.includes(`tag${n}</b>`));
  expect(missing.map((n) => fields[n - 1])).toEqual([]);
  expect(review).toContain(shownAs(`m'"<b data-pwn=path>\u202e.ts`));

  // The approve confirmation (its "same as" command quotes the hostile rule as one shell word).
  await page.click("form#approve button#approve");
  const confirm = await expectClean(page, "approve confirmation", ["tether approve hostile --all"]);
  expect(confirm).toContain("Approve hostile 1.1.0?");
  await page.goto(`${consoleUrl}/ext/hostile`);
  await page.click("form#uninstall button#uninstall");
  await expectClean(page, "uninstall confirmation", ["tether uninstall hostile"]);

  // The audit, the audit with hostile filters (shown back in the form), a call.
  await page.goto(`${consoleUrl}/audit`);
  await expectClean(page, "audit", ["\\u{202e}"]);
  const q = new URLSearchParams({
    extension: fields[0]!,
    session: fields[1]!,
    outcome: fields[2]!,
    decision: fields[3]!,
    from: fields[4]!,
    to: "javascript:alert(1)",
    page: "-1",
  });
  await page.goto(`${consoleUrl}/audit?${q}`);
  await expectClean(page, "audit, hostile filters", []);
  // Shown back as the inputs' values (an input drops line breaks), and the problem line writes the controls out.
  expect(await page.locator("input[name=extension]").inputValue()).toContain('<b data-pwn="1">tag1</b>');
  expect(await page.locator("#problem").innerText()).toContain("\\u{202e}");
  await page.goto(`${consoleUrl}/audit/call/${invocationId}`);
  await expectClean(page, "call", ["\\u{202e}", "<script>window.__pwned="]);

  // The sessions page and a session's confirmation: the workspace as text.
  await page.goto(`${consoleUrl}/sessions`);
  await expectClean(page, "sessions", [shownAs(workspaceName)]);
  await page.locator("tr[data-session=hostile-ws] form.close button").click();
  await expectClean(page, "session close confirmation", [shownAs(workspaceName)]);

  // A hostile path: a 404 that shows it as text, and a traversal that reaches nothing.
  await page.goto(`${consoleUrl}/${encodeURIComponent('"><b data-pwn=404>x</b>')}`);
  await expectClean(page, "404", ["Nothing at /console/%22%3E%3Cb%20data-pwn%3D404%3Ex%3C%2Fb%3E"]);
  for (const path of ["ext/..%2f..%2fetc%2fpasswd", "ext/%2e%2e%2f%2e%2e%2fhome", "ext/..%2faudit"]) {
    const answer = await page.goto(`${consoleUrl}/${path}`);
    expect([path, answer?.status()]).toEqual([path, 404]);
    await expectClean(page, path, []);
  }
});

test("the check finds an injected element, attribute, style and script (it can fail)", async () => {
  const page = await browser.page();
  await page.setContent(
    `<html><body><p>ok</p><b data-pwn="1">x</b><div style="color:red" onclick="x()">y</div><script>window.__pwned = 1</script><a href="javascript:alert(1)">z</a></body></html>`,
  );
  const found = await inspect(page);
  expect(found.strange).toEqual(expect.arrayContaining(["b[data-pwn]", "div[style]", "div[onclick]", "<script>"]));
  expect(found.offsite).toEqual(["javascript:alert(1)"]);
  expect(found.pwned).toBe(1);
});
