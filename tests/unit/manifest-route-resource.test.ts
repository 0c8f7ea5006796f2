/**
 * A `[[route]]` row's `resource` (broker/install/route-resource.ts): a fixed
 * URI or an RFC 6570 level-1 template, its MIME type (text/plain by default);
 * refused, naming the route and what to change: a URI without a scheme, with
 * spaces or braces that are not a `{name}`, past its bound; operators and
 * lists in an expression; the broker's own scheme; two variables side by side
 * or one named twice; a URI two routes serve. The published schema refuses
 * what it can say.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
import { parse as parseToml } from "smol-toml";
import { parseManifest } from "../../broker/install/manifest.js";
import { MAX_RESOURCE_URI, templateVariables } from "../../broker/install/route-resource.js";

const SCHEMA = join(resolve(dirname(fileURLToPath(import.meta.url)), "../../manifests"), "schema.json");
const validate = new Ajv({ allErrors: true, strict: true }).compile(JSON.parse(readFileSync(SCHEMA, "utf8")));

const HEAD = `name = "docs"\nversion = "1.0.0"\ndescription = "Docs."\nentry = "index.ts"\n`;
const route = (name: string, resource: string) =>
  `[[route]]\nname = "${name}"\ndescription = "The ${name}."\nresource = ${resource}\n`;
const manifest = (...routes: string[]) => `${HEAD}${routes.join("")}`;
const parse = (text: string) => parseManifest(text, "manifest.toml");
const schemaAccepts = (text: string) => validate(parseToml(text));

test("a fixed URI and a template are read, the MIME type defaulting to text/plain; a route may have none", () => {
  const text = manifest(
    route("readme", '{ uri = "docs://readme" }'),
    route("item", '{ uri = "docs://items/{id}/v/{version}", mime_type = "application/json" }'),
    `[[route]]\nname = "plain"\ndescription = "No resource."\n`,
  );
  expect(parse(text).route.map((r) => [r.name, r.resource])).toEqual([
    ["readme", { uri: "docs://readme", mime_type: "text/plain" }],
    ["item", { uri: "docs://items/{id}/v/{version}", mime_type: "application/json" }],
    ["plain", undefined],
  ]);
  expect(schemaAccepts(text)).toBe(true);
  expect(templateVariables("docs://items/{id}/v/{version}")).toEqual(["id", "version"]);
  expect(templateVariables("docs://readme")).toEqual([]);
});

test.each([
  ["no scheme", '{ uri = "readme" }'],
  ["a space", '{ uri = "docs://read me" }'],
  ["a lone brace", '{ uri = "docs://items/{id" }'],
  ["an operator (level 2)", '{ uri = "docs://items/{+path}" }'],
  ["a list of variables (level 3)", '{ uri = "docs://items/{a,b}" }'],
  ["a modifier (level 4)", '{ uri = "docs://items/{list*}" }'],
  ["a variable name past 64 characters", `{ uri = "docs://items/{${"v".repeat(65)}}" }`],
  ["a URI past its bound", `{ uri = "docs://${"a".repeat(MAX_RESOURCE_URI)}" }`],
  ["a MIME type with parameters", '{ uri = "docs://readme", mime_type = "text/plain; charset=utf-8" }'],
  ["a MIME type without a subtype", '{ uri = "docs://readme", mime_type = "text" }'],
  ["an unknown key", '{ uri = "docs://readme", subscribe = true }'],
])("%s is refused by the manifest and by the published schema, naming the field", (_what, resource) => {
  const text = manifest(route("readme", resource));
  expect(() => parse(text)).toThrow(/manifest\.toml: route\.0\.resource(\.uri|\.mime_type|\.subscribe)?: /);
  expect(schemaAccepts(text)).toBe(false);
});

test.each([
  [
    "the broker's own scheme",
    [route("notes", '{ uri = "Tether://context/x/notes" }')],
    "route 'notes': resource.uri 'Tether://context/x/notes' uses the scheme tether:, which the broker's own resources use; choose another scheme",
  ],
  [
    "two variables side by side",
    [route("item", '{ uri = "docs://items/{a}{b}" }')],
    "route 'item': resource.uri 'docs://items/{a}{b}' has two variables side by side, which a read could not tell apart; put a character between them",
  ],
  [
    "a variable named twice",
    [route("item", '{ uri = "docs://items/{id}/{id}" }')],
    "route 'item': resource.uri 'docs://items/{id}/{id}' names the variable {id} twice; give each its own name",
  ],
  [
    "more than 16 variables",
    [route("item", `{ uri = "docs://${Array.from({ length: 17 }, (_, i) => `{v${i}}`).join("/")}" }`)],
    "has 17 {variables}; a template may have at most 16",
  ],
  [
    "one URI served by two routes",
    [route("a", '{ uri = "docs://readme" }'), route("b", '{ uri = "docs://readme", mime_type = "text/markdown" }')],
    "route 'b': resource.uri 'docs://readme' is also the resource of route 'a'; each route must serve its own URIs",
  ],
  [
    "two templates that differ only in their variables' names",
    [route("a", '{ uri = "docs://items/{id}" }'), route("b", '{ uri = "docs://items/{key}" }')],
    "route 'b': resource.uri 'docs://items/{key}' is also the resource of route 'a'",
  ],
])("%s is refused at install, saying what to change", (_what, routes, message) => {
  expect(() => parse(manifest(...routes))).toThrow(message);
});
