/**
 * The console's actions over real HTTP, each checked against the store and
 * against the CLI doing the same thing (`node bin/tether.js` on a second home
 * with the same install): approve narrowed to some rules leaves the row
 * `tether approve --only` leaves, with `by` the name signed in as; approve with
 * every rule is `--all`; revoke and uninstall, each after its confirmation,
 * recorded as revoked by that name (as `tether revoke` records the operator's
 * name); the review page's rules and, after an upgrade, its diff with every
 * widening marked.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { approvals } from "../../broker/store/schema.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { writeExtensions } from "./support/write-extensions.js";
import { ConsoleClient, registryRows, startConsole, type ConsoleRig } from "./support/console-client.js";

const RULES = [
  "GET https://api.example.com/v1",
  "POST https://hooks.example.org/in",
  "GET https://*.cdn.example.net/assets",
];
const MESH = {
  manifest: `
[[tool]]
name = "look"
description = "Looks something up."
parameters = { type = "object", properties = {} }

[net]
allow = ${JSON.stringify(RULES)}
`,
  code: `export const tools = { look: () => "looked" };\n`,
};

const BIN = join(REPO, "bin", "tether.js");
let fixtures: string;
let rig: ConsoleRig;
let client: ConsoleClient;

/** Runs the real CLI on `home`. */
async function tether(home: string, ...args: string[]) {
  const result = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 45_000,
  });
  expect([args.join(" "), result.exitCode, result.stderr]).toEqual([args.join(" "), 0, expect.any(String)]);
  return result.stdout;
}

/** A second home with the same folders installed (the CLI's side of each comparison). */
async function cliHome(name: string, ...folders: string[]): Promise<string> {
  const home = join(rig.tmp, name);
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  for (const folder of folders) await broker.registry.install(folder);
  await broker.close();
  return home;
}

/** An approval row as the comparison sees it: what it records, not when or under which id. */
function rowOf(broker: Broker, extension: string) {
  const rows = broker.store.orm
    .select()
    .from(approvals)
    .all()
    .filter((r) => r.extension === extension);
  return rows.map(({ id: _id, approvedAt: _a, revokedAt, ...rest }) => ({ ...rest, revoked: revokedAt !== null }));
}

function rowsIn(home: string, extension: string) {
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    return rowOf(broker, extension);
  } finally {
    void broker.close();
  }
}

beforeAll(async () => {
  fixtures = writeExtensions("tether-console-actions-ext-", {
    mesh: MESH,
    plain: { manifest: MESH.manifest.replace(/\[net\][^]*$/, ""), code: MESH.code },
  });
  rig = await startConsole("tether-console-actions-", async (broker) => {
    await broker.registry.install(join(fixtures, "mesh"));
    await broker.registry.install(join(fixtures, "plain"));
  });
  client = new ConsoleClient(rig.base);
  expect((await client.login(undefined, "alice")).status).toBe(303);
});

afterAll(async () => {
  await rig?.stop();
});

describe("the pages", () => {
  test("the list shows each extension with its status and what it can reach", async () => {
    const { text } = await client.get("/console/");
    expect(text).toMatch(/<table id="extensions"/);
    expect(text).toMatch(/<tr data-extension="mesh" data-status="pending">/);
    expect(text).toMatch(/<a class="review" href="\/console\/ext\/mesh">/);
    // At a glance: each rule in its canonical form.
    expect(text).toMatch(/<td class="reach"><div class="mono">GET https:\/\/api\.example\.com:443\/v1<\/div>/);
  });

  test("the review shows every requested rule decoded, in the sections the contract names, with a checkbox per rule, checked", async () => {
    const { text } = await client.get("/console/ext/mesh");
    for (const id of ["rules", "tools", "hooks", "commands", "limits", "secrets"])
      expect([id, text.includes(`<section id="${id}">`)]).toEqual([id, true]);
    expect(text).not.toContain('<section id="diff">');
    for (const rule of RULES) {
      expect(text).toContain(`<li data-rule="${rule}">`);
      expect(text).toContain(`<input type="checkbox" name="rule" value="${rule}" checked/>`);
    }
    expect(text).toContain("means: GET https://api.example.com:443/v1");
    expect(text).toMatch(/<form id="approve" method="post" action="\/console\/ext\/mesh\/approve">/);
    expect(text).toMatch(/<button id="approve" type="submit">/);
    expect(text).toMatch(/<form id="uninstall" method="post" action="\/console\/ext\/mesh\/uninstall">/);
  });
});

describe("approve", () => {
  test("the first POST only confirms, naming the rules granted and left out and the command that does the same", async () => {
    const before = registryRows(rig.broker);
    const confirm = await client.post("/console/ext/mesh/approve", { rule: [RULES[0]!, RULES[2]!] });
    expect(confirm.status).toBe(200);
    expect(registryRows(rig.broker)).toBe(before);
    expect(confirm.text).toContain('<section id="confirm">');
    expect(confirm.text).toContain(
      `<li>Egress granted (2 of 3 rules):<ul class="items"><li><code>${RULES[0]}</code></li><li><code>${RULES[2]}</code></li></ul></li>`,
    );
    expect(confirm.text).toContain(
      `<li>Egress left out (1; a later approval keeps it out unless --all):<ul class="items"><li><code>${RULES[1]}</code></li></ul></li>`,
    );
    expect(confirm.text).toContain("recorded as approved by alice");
    expect(confirm.text).toContain(`tether approve mesh --only '${RULES[0]}' --only '${RULES[2]}'`);
    expect(confirm.text).toMatch(/<form id="confirm-form"[^>]*action="\/console\/ext\/mesh\/approve"/);
    expect(confirm.text).toContain(`<input type="hidden" name="rule" value="${RULES[2]}"/>`);
    expect(confirm.text).toContain('<input type="hidden" name="confirm" value="yes"/>');
    expect(confirm.text).toMatch(/<button id="confirm"/);
  });

  test("narrowed through the page: the same approval row as tether approve --only (and registry.approve with onlyNet), by the name signed in as", async () => {
    const done = await client.post("/console/ext/mesh/approve", { rule: [RULES[0]!, RULES[2]!], confirm: "yes" });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/console/ext/mesh");
    const page = await client.get("/console/ext/mesh");
    expect(page.text).toMatch(
      /<p id="flash" role="status">approved mesh 1\.0\.0 \(egress: GET https:\/\/api\.example\.com\/v1, GET https:\/\/\*\.cdn\.example\.net\/assets\)<\/p>/,
    );
    const console = rowOf(rig.broker, "mesh");
    expect(console).toHaveLength(1);
    expect(console[0]).toMatchObject({
      approvedBy: "alice",
      withheldNet: JSON.stringify([RULES[1]]),
      revoked: false,
      revokedBy: null,
    });

    const library = Broker.open({
      ...envOptions(),
      home: await cliHome("library-home", join(fixtures, "mesh")),
      log: silentLogger,
    });
    library.registry.approve("mesh", { onlyNet: [RULES[0]!, RULES[2]!], by: "alice" });
    expect(rowOf(library, "mesh")).toEqual(console);
    await library.close();

    // The CLI records the operator's name, as the console does for a sign-in that named none.
    const home = await cliHome("cli-home", join(fixtures, "mesh"));
    await tether(home, "approve", "mesh", "--only", RULES[0]!, "--only", RULES[2]!, "--yes");
    const cli = rowsIn(home, "mesh");
    expect(cli).toEqual([{ ...console[0], approvedBy: rig.broker.registry.operator }]);
  });

  test("every rule left checked is tether approve --all: the rule an earlier narrowing withheld is granted again", async () => {
    const confirm = await client.post("/console/ext/mesh/approve", { rule: RULES });
    expect(confirm.text).toContain("tether approve mesh --all");
    expect((await client.post("/console/ext/mesh/approve", { rule: RULES, confirm: "yes" })).status).toBe(303);
    const latest = rig.broker.registry.latestApproval("mesh")!;
    expect(latest.grants.net).toEqual(RULES);
    expect(latest.withheldNet).toEqual([]);
    // The approval it replaced is stamped revoked, by who replaced it.
    expect(rowOf(rig.broker, "mesh").map((r) => [r.revoked, r.revokedBy])).toEqual([
      [true, "alice"],
      [false, null],
    ]);
  });

  test("a rule the manifest does not request, or no rule at all, is refused and nothing changes", async () => {
    const before = registryRows(rig.broker);
    const extra = await client.post("/console/ext/mesh/approve", {
      rule: [RULES[0]!, "GET https://evil.example/"],
      confirm: "yes",
    });
    expect(extra.status).toBe(400);
    expect(extra.text).toContain("GET https://evil.example/: not requested by 'mesh'");
    const none = await client.post("/console/ext/mesh/approve", { confirm: "yes" });
    expect(none.status).toBe(400);
    expect(registryRows(rig.broker)).toBe(before);
  });

  test("an extension without rules is approved as tether approve NAME", async () => {
    const confirm = await client.post("/console/ext/plain/approve");
    expect(confirm.text).toContain('<code id="same-command">tether approve plain</code>');
    expect((await client.post("/console/ext/plain/approve", { confirm: "yes" })).status).toBe(303);
    expect(rig.broker.registry.status(rig.broker.registry.require("plain"))).toBe("approved");
  });
});

describe("revoke and uninstall", () => {
  test("revoke: confirmation, then the approval stamped revoked by the name signed in as; the review says by whom and when", async () => {
    const before = registryRows(rig.broker);
    const confirm = await client.post("/console/ext/mesh/revoke");
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("recorded as revoked by alice");
    expect(confirm.text).toContain("tether revoke mesh");
    expect(registryRows(rig.broker)).toBe(before);
    const done = await client.post("/console/ext/mesh/revoke", { confirm: "yes" });
    expect(done.status).toBe(303);
    const latest = rig.broker.registry.latestApproval("mesh")!;
    expect(latest.revokedBy).toBe("alice");
    expect(latest.revokedAt).not.toBeNull();
    const page = await client.get("/console/ext/mesh");
    expect(page.text).toContain("revoked mesh; running satellites stop on their next call");
    expect(page.text).toContain(`revoked by alice at ${new Date(latest.revokedAt!).toISOString()}`);
    expect((await client.get("/console/")).text).toMatch(/<tr data-extension="mesh" data-status="revoked">/);
  });

  test("tether revoke records the operator's name as revoked_by, and tether review shows it", async () => {
    const home = await cliHome("cli-revoke-home", join(fixtures, "plain"));
    await tether(home, "approve", "plain", "--yes");
    await tether(home, "revoke", "plain");
    const [row] = rowsIn(home, "plain");
    expect(row).toMatchObject({ revoked: true, revokedBy: rig.broker.registry.operator });
    expect(await tether(home, "review", "plain")).toContain(
      `status: revoked — revoked by ${rig.broker.registry.operator} at `,
    );
  });

  test("uninstall: confirmation naming what stays, then the install gone and its approval revoked by the name signed in as", async () => {
    const confirm = await client.post("/console/ext/plain/uninstall");
    expect(confirm.text).toContain("The install of plain 1.0.0 is removed");
    expect(confirm.text).toContain("tether uninstall plain");
    expect(rig.broker.registry.get("plain")).not.toBeNull();
    const done = await client.post("/console/ext/plain/uninstall", { confirm: "yes" });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/console/");
    expect(rig.broker.registry.get("plain")).toBeNull();
    expect(rig.broker.registry.latestApproval("plain")).toMatchObject({ revokedBy: "alice" });
    const list = await client.get("/console/");
    expect(list.text).toContain("uninstalled plain");
    expect(list.text).not.toContain('data-extension="plain"');
  });
});

describe("an upgrade", () => {
  test("the review's diff marks every widening; approving it is confirmed as asking for more", async () => {
    // Approve, then upgrade the folder: one more rule and one more tool.
    expect((await client.post("/console/ext/mesh/approve", { rule: RULES, confirm: "yes" })).status).toBe(303);
    const manifest = join(fixtures, "mesh", "manifest.toml");
    const wider = readFileSync(manifest, "utf8")
      .replace('version = "1.0.0"', 'version = "1.1.0"')
      .replace("allow = [", 'allow = ["GET https://more.example.com/",')
      .replace(
        "[net]",
        '[[tool]]\nname = "poke"\ndescription = "Pokes."\nparameters = { type = "object", properties = {} }\n\n[net]',
      );
    writeFileSync(manifest, wider);
    writeFileSync(
      join(fixtures, "mesh", "index.ts"),
      `export const tools = { look: () => "looked", poke: () => "poked" };\n`,
    );
    await rig.broker.registry.install(join(fixtures, "mesh"));
    const list = await client.get("/console/");
    expect(list.text).toMatch(/<tr data-extension="mesh" data-status="changed">/);
    const { text } = await client.get("/console/ext/mesh");
    const diff = /<section id="diff">([^]*?)<\/section>/.exec(text)?.[1] ?? "";
    expect(diff).toContain("CHANGED SINCE APPROVAL");
    expect(diff).toMatch(/<li class="widening">\+ network: GET https:\/\/more\.example\.com\/<\/li>/);
    expect(diff).toMatch(/<li class="widening">\+ tool: poke<\/li>/);
    expect(text).toMatch(/<li data-rule="GET https:\/\/more\.example\.com\/" class="widening">/);
    // What tether review --diff adds: how each source file changed.
    const sources = /<section id="source-diff">([^]*?)<\/section>/.exec(text)?.[1] ?? "";
    expect(sources).toContain('<details data-path="index.ts">');
    expect(sources).toMatch(
      /<span class="add">\+export const tools = \{ look: \(\) => &quot;looked&quot;, poke: \(\) => &quot;poked&quot; \};/,
    );
    expect(sources).toContain('<details data-path="manifest.toml">');
    const confirm = await client.post("/console/ext/mesh/approve", {
      rule: ["GET https://more.example.com/", ...RULES],
    });
    expect(confirm.text).toContain("This upgrade asks for MORE than was approved");
  });
});
