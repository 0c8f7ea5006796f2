/**
 * A confirmation acts on what it showed, nothing else: its form carries the
 * digest of what it says and acts on (`seen`), and a confirm is done only when
 * the confirmation made again now has the same digest. Probed: a confirm with
 * no digest (a hand-made form), the confirmation for 1.0.0 posted after 1.1.0
 * was installed underneath it, one confirmation posted twice at once (approve
 * and revoke), the rules of a confirmation swapped for others. Each refusal is
 * a 409 showing the confirmation as it stands now, and changes nothing.
 * And the confirmation lists each rule as its own item: a rule whose text
 * holds ", GET https://…" (which the rule parser takes as a path) cannot pass
 * for two rules, nor make one left out read as granted.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approvals } from "../../broker/store/schema.js";
import { ConsoleClient, registryRows, seenIn, startConsole, type ConsoleRig } from "./support/console-client.js";

const RULES = ["GET https://api.example.com/v1", "POST https://hooks.example.org/in"];

function version(root: string, v: string, rules: readonly string[], name = "drift"): string {
  const dir = join(root, `${name}-${v}`);
  mkdirSync(dir);
  writeFileSync(
    join(dir, "manifest.toml"),
    `name = "${name}"\nversion = "${v}"\ndescription = "Drifts."\nentry = "index.ts"\n\n[[tool]]\nname = "look"\ndescription = "Looks."\nparameters = { type = "object", properties = {} }\n\n[net]\nallow = ${JSON.stringify(rules)}\n\n[limits]\nmemory_mb = 64\nidle_s = 0\n`,
  );
  writeFileSync(join(dir, "index.ts"), `export const tools = { look: () => "${v}" };\n`);
  return dir;
}

/** A rule whose path reads like a second rule and a note, and the rule it hides. */
const COMMA = [
  "GET https://docs.example.com/a, GET https://evil.example.net (all left out)",
  "GET https://evil.example.net",
];

let root: string;
let rig: ConsoleRig;
let client: ConsoleClient;

const rows = () =>
  rig.broker.store.orm
    .select()
    .from(approvals)
    .all()
    .filter((r) => r.extension === "drift");

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-console-replay-ext-"));
  rig = await startConsole("tether-console-replay-", async (broker) => {
    await broker.registry.install(version(root, "1.0.0", RULES));
    await broker.registry.install(version(root, "1.0.0", COMMA, "comma"));
  });
  client = new ConsoleClient(rig.base);
  expect((await client.login(undefined, "alice")).status).toBe(303);
});

afterAll(async () => {
  await rig?.stop();
});

test("confirm=yes without the confirmation's digest does nothing: 409 and the confirmation to read", async () => {
  const before = registryRows(rig.broker);
  const forged = await client.postOnce("/console/ext/drift/approve", { rule: RULES, confirm: "yes" });
  expect(forged.status).toBe(409);
  expect(forged.text).toContain('<section id="confirm">');
  expect(forged.text).toContain('id="problem"');
  expect(registryRows(rig.broker)).toBe(before);
  const wrong = await client.postOnce("/console/ext/drift/approve", {
    rule: RULES,
    confirm: "yes",
    seen: "0".repeat(64),
  });
  expect(wrong.status).toBe(409);
  expect(registryRows(rig.broker)).toBe(before);
});

test("a confirmation's digest does not carry over to other rules", async () => {
  const shown = await client.postOnce("/console/ext/drift/approve", { rule: [RULES[0]!] });
  const seen = seenIn(shown.text)!;
  const before = registryRows(rig.broker);
  const swapped = await client.postOnce("/console/ext/drift/approve", { rule: RULES, confirm: "yes", seen });
  expect(swapped.status).toBe(409);
  expect(registryRows(rig.broker)).toBe(before);
});

test("the confirmation for 1.0.0 posted after 1.1.0 was installed approves nothing; it shows 1.1.0's to confirm", async () => {
  const shown = await client.postOnce("/console/ext/drift/approve", { rule: RULES });
  expect(shown.text).toContain("Approve drift 1.0.0?");
  const seen = seenIn(shown.text)!;
  // Same name, same rules, other code: installed underneath the open confirmation.
  await rig.broker.registry.install(version(root, "1.1.0", RULES));
  const before = registryRows(rig.broker);
  const replayed = await client.postOnce("/console/ext/drift/approve", { rule: RULES, confirm: "yes", seen });
  expect(replayed.status).toBe(409);
  expect(replayed.text).toContain("Approve drift 1.1.0?");
  expect(registryRows(rig.broker)).toBe(before);
  expect(rows()).toHaveLength(0);
  // Confirming what is shown now approves 1.1.0.
  const done = await client.postOnce("/console/ext/drift/approve", {
    rule: RULES,
    confirm: "yes",
    seen: seenIn(replayed.text)!,
  });
  expect(done.status).toBe(303);
  expect(rig.broker.registry.require("drift").version).toBe("1.1.0");
  expect(rows()).toHaveLength(1);
});

test("one approve confirmation posted twice at once makes one approval", async () => {
  const shown = await client.postOnce("/console/ext/drift/approve", { rule: [RULES[0]!] });
  const seen = seenIn(shown.text)!;
  const count = rows().length;
  const answers = await Promise.all(
    [0, 1, 2].map(() => client.postOnce("/console/ext/drift/approve", { rule: [RULES[0]!], confirm: "yes", seen })),
  );
  expect(answers.map((a) => a.status).sort()).toEqual([303, 409, 409]);
  expect(rows()).toHaveLength(count + 1);
});

test("one revoke confirmation posted twice at once revokes once", async () => {
  const shown = await client.postOnce("/console/ext/drift/revoke");
  const seen = seenIn(shown.text)!;
  const answers = await Promise.all(
    [0, 1].map(() => client.postOnce("/console/ext/drift/revoke", { confirm: "yes", seen })),
  );
  expect(answers.map((a) => a.status).sort()).toEqual([303, 409]);
  expect(answers.find((a) => a.status === 409)!.text).toContain("has no approval in force");
  expect(rows().filter((r) => r.revokedAt !== null)).toHaveLength(rows().length);
});

test("each rule of a confirmation is its own item: a rule holding ', GET …' stays one, and a rule left out is listed as left out", async () => {
  const shown = await client.postOnce("/console/ext/comma/approve", { rule: COMMA });
  expect(shown.status).toBe(200);
  const granted = /<li>Egress granted \(2 of 2 rules\):<ul class="items">(.*?)<\/ul><\/li>/.exec(shown.text)?.[1] ?? "";
  expect([...granted.matchAll(/<li><code>(.*?)<\/code><\/li>/g)].map((m) => m[1])).toEqual(COMMA);
  const narrowed = await client.postOnce("/console/ext/comma/approve", { rule: [COMMA[0]!] });
  const left = /<li>Egress left out \(1; [^<]*<ul class="items">(.*?)<\/ul><\/li>/.exec(narrowed.text)?.[1] ?? "";
  expect([...left.matchAll(/<li><code>(.*?)<\/code><\/li>/g)].map((m) => m[1])).toEqual([COMMA[1]]);
});

test("rules given twice grant once, and the confirmation names each once; a rule not requested is refused", async () => {
  const shown = await client.postOnce("/console/ext/comma/approve", { rule: [COMMA[0]!, COMMA[0]!, COMMA[0]!] });
  expect(shown.status).toBe(200);
  expect(shown.text.match(/<input type="hidden" name="rule"/g)).toHaveLength(1);
  const done = await client.postOnce("/console/ext/comma/approve", {
    rule: [COMMA[0]!, COMMA[0]!],
    confirm: "yes",
    seen: seenIn(shown.text)!,
  });
  expect(done.status).toBe(303);
  expect(rig.broker.registry.latestApproval("comma")!.grants.net).toEqual([COMMA[0]]);
  const before = registryRows(rig.broker);
  const extra = await client.postOnce("/console/ext/comma/approve", { rule: [COMMA[0]!, "GET https://evil.example/"] });
  expect(extra.status).toBe(400);
  expect(registryRows(rig.broker)).toBe(before);
});
