/**
 * The manifest's `[[act]]` rows (broker/install/act-row.ts): names, bounds,
 * no name twice, parameters that must compile; granted by the approval (a new
 * act widens) and shown at review.
 */
import { parseManifest } from "../../broker/install/manifest.js";
import { manifestProblems } from "../../broker/install/manifest-checks.js";
import { actReviewLines, MAX_ACTS } from "../../broker/install/act-row.js";
import { TetherError } from "../../broker/base/errors.js";
import { diffGrants, requestedGrants, widens } from "../../broker/registry/grants.js";

const FILE = "ext/mailer/manifest.toml";
const HEAD = `name = "mailer"
version = "1.0.0"
description = "Mail"
entry = "index.ts"
`;

function refusal(text: string): string {
  try {
    parseManifest(text, FILE);
  } catch (err) {
    expect(err).toBeInstanceOf(TetherError);
    expect((err as TetherError).code).toBe("install_failed");
    return (err as TetherError).message;
  }
  throw new Error("Expected the manifest to be refused");
}

const act = (name: string, extra = "") => `[[act]]\nname = "${name}"\ndescription = "Does ${name}."\n${extra}\n`;

test("no [[act]]: none", () => {
  expect(parseManifest(HEAD, FILE).act).toEqual([]);
});

test("rows parse with their description and optional parameters", () => {
  const m = parseManifest(
    HEAD + act("mail.submit", 'parameters = { type = "object", required = ["to"] }') + act("payment.charge"),
    FILE,
  );
  expect(m.act).toEqual([
    { name: "mail.submit", description: "Does mail.submit.", parameters: { type: "object", required: ["to"] } },
    { name: "payment.charge", description: "Does payment.charge." },
  ]);
});

test.each([
  ["Mail.submit"],
  ["mail..submit"],
  ["mail.submit."],
  [".mail"],
  ["1mail"],
  ["mail submit"],
  ["mail.*"],
  [`m${"a".repeat(64)}`],
])("the name %s is refused, saying what a name is", (name) => {
  expect(refusal(HEAD + act(name))).toMatch(/^ext\/mailer\/manifest\.toml: act\.0\.name: expected an act name/);
});

test.each([["mail"], ["mail.submit"], ["a.b-c.d_e"], [`m${"a".repeat(63)}`]])("the name %s is taken", (name) => {
  expect(parseManifest(HEAD + act(name), FILE).act[0]?.name).toBe(name);
});

test("a name twice is refused, naming it", () => {
  expect(refusal(HEAD + act("mail.submit") + act("mail.submit"))).toBe(
    `${FILE}: act 'mail.submit' is declared twice; give each [[act]] its own name`,
  );
});

test("a missing or empty description, an unknown key, too many rows", () => {
  expect(refusal(`${HEAD}[[act]]\nname = "mail.submit"\n`)).toContain("act.0.description: missing");
  expect(refusal(`${HEAD}[[act]]\nname = "mail.submit"\ndescription = ""\n`)).toContain(
    "act.0.description: expected a description of the act",
  );
  expect(refusal(HEAD + act("mail.submit", "deadline_ms = 5"))).toContain("act.0.deadline_ms: Invalid key");
  const many = Array.from({ length: MAX_ACTS + 1 }, (_, i) => act(`a${i}`)).join("");
  expect(refusal(HEAD + many)).toContain(`act: expected at most ${MAX_ACTS} [[act]] rows`);
});

test("parameters that do not compile as JSON Schema are an install problem naming the row", () => {
  const m = parseManifest(HEAD + act("mail.submit", 'parameters = { type = "strin" }'), FILE);
  const problems = manifestProblems(m, FILE);
  expect(problems).toHaveLength(1);
  expect(problems[0]).toMatch(
    /^ext\/mailer\/manifest\.toml: act\.0\.parameters \(act 'mail\.submit'\) is not a valid JSON Schema: /,
  );
});

test("acts are granted by name; a new one widens an upgrade; none leaves the grants as they were", () => {
  const one = requestedGrants(parseManifest(HEAD + act("mail.submit"), FILE));
  const two = requestedGrants(parseManifest(HEAD + act("mail.submit") + act("payment.charge"), FILE));
  expect(one.acts).toEqual(["mail.submit"]);
  expect("acts" in requestedGrants(parseManifest(HEAD, FILE))).toBe(false);
  const diff = diffGrants(one, two);
  expect(diff.addedSession).toEqual(["act payment.charge"]);
  expect(widens(diff)).toBe(true);
  expect(widens(diffGrants(two, one))).toBe(false);
});

test("review says what each act is, marking a new one", () => {
  const m = parseManifest(HEAD + act("mail.submit"), FILE);
  expect(actReviewLines(m.act, (item) => (item === "act mail.submit" ? "   [NEW]" : ""))).toEqual([
    "It reports act mail.submit: Does mail.submit. (the session's tool_call and tool_result hooks see its " +
      "arguments and output, and may block it)   [NEW]",
  ]);
});
