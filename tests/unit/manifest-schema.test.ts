/**
 * The published manifest schema (`manifests/schema.json`): generated from the
 * valibot `Manifest`, never stale, and it accepts what the broker accepts.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import { parse as parseToml } from "smol-toml";
import { parseManifest } from "../../broker/install/manifest.js";
import { manifestJsonSchemaText, SCHEMA_ID } from "../../manifests/generate-schema.js";

const MANIFESTS = resolve(dirname(fileURLToPath(import.meta.url)), "../../manifests");
const SCHEMA_FILE = join(MANIFESTS, "schema.json");
const EXAMPLES = ["echo", "misbehave"];

const published = JSON.parse(readFileSync(SCHEMA_FILE, "utf8")) as Record<string, unknown>;
const validate = new Ajv({ allErrors: true, strict: true }).compile(published);

const HEAD = `name = "weather"
version = "1.2.3"
description = "Weather for a city"
entry = "src/mod.ts"
`;

/** The ajv errors of `text` against the published schema, as `path: message` lines (the root is ""). */
function schemaErrors(text: string): string[] {
  if (validate(parseToml(text))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath}: ${e.message ?? ""}`);
}

describe("manifests/schema.json", () => {
  test("manifests/schema.json is what manifests/generate-schema.ts generates now (if not, run: npx tsx manifests/generate-schema.ts)", () => {
    expect(readFileSync(SCHEMA_FILE, "utf8")).toBe(manifestJsonSchemaText());
  });

  test("manifests/schema.json names itself and keeps the regexes and defaults of the manifest", () => {
    expect(published.$id).toBe(SCHEMA_ID);
    expect(published.$schema).toBe("http://json-schema.org/draft-07/schema#");
    const properties = published.properties as Record<string, Record<string, unknown>>;
    expect(properties.version?.pattern).toEqual(expect.any(String));
    expect(properties.limits?.properties).toMatchObject({ memory_mb: { default: 128, minimum: 16, maximum: 8192 } });
    for (const [key, value] of Object.entries(properties))
      expect([key, typeof value.description]).toEqual([key, "string"]);
  });

  test.each(EXAMPLES)("the example manifest '%s' validates against the schema and parseManifest()", (name) => {
    const file = join(MANIFESTS, name, "manifest.toml");
    const text = readFileSync(file, "utf8");
    expect(schemaErrors(text)).toEqual([]);
    expect(parseManifest(text, file).name).toBe(name);
  });

  test("a minimal manifest validates against the schema", () => {
    expect(schemaErrors(HEAD)).toEqual([]);
  });

  test.each([
    ["a version that is not semver", HEAD.replace('"1.2.3"', '"one"'), "/version"],
    ["a missing entry", HEAD.replace('entry = "src/mod.ts"\n', ""), ""],
    ["an unknown top-level key", `${HEAD}colour = "blue"\n`, ""],
    ["an upper-case name", HEAD.replace('"weather"', '"Weather"'), "/name"],
    ["memory_mb under its bound", `${HEAD}[limits]\nmemory_mb = 4\n`, "/limits/memory_mb"],
    ["a fractional idle_s", `${HEAD}[limits]\nidle_s = 1.5\n`, "/limits/idle_s"],
    ["an unknown hook event", `${HEAD}[[hook]]\nevent = "on_start"\n`, "/hook/0/event"],
    ["a tool row without description", `${HEAD}[[tool]]\nname = "x"\n`, "/tool/0"],
    ["net.allow that is not an array", `${HEAD}[net]\nallow = "example.com"\n`, "/net/allow"],
  ])("the schema refuses %s, as parseManifest() does", (_what, text, path) => {
    const errors = schemaErrors(text);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.some((e) => e.startsWith(`${path}:`))).toBe(true);
    expect(() => parseManifest(text, "manifest.toml")).toThrow();
  });
});
