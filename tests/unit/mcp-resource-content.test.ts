/**
 * How `tether mcp` reads a route's resource: a URI against its level-1
 * template (broker/mcp/uri-template.ts: literals exactly, a variable one or
 * more characters short of `/ ? #`, %-decoded), and the route's answer as the
 * resource's content (broker/mcp/resource-content.ts: text for a text type,
 * checked base64 as `blob` for any other).
 */
import { McpFailure } from "../../broker/mcp/mcp-failure.js";
import { sessionResources } from "../../broker/mcp/resources.js";
import { isTextMimeType, resourceContents } from "../../broker/mcp/resource-content.js";
import { uriTemplate } from "../../broker/mcp/uri-template.js";

test("a URI fills the template's variables, %-decoded; one that does not fit matches nothing", () => {
  const t = uriTemplate("test://template/{id}/data");
  expect(t.match("test://template/123/data")).toEqual({ id: "123" });
  expect(t.match("test://template/a%2Fb%20c/data")).toEqual({ id: "a/b c" });
  expect(t.match("test://template//data")).toBeNull();
  expect(t.match("test://template/1/2/data")).toBeNull();
  expect(t.match("test://template/1/data/more")).toBeNull();
  expect(t.match("test://template/%E0%A4/data")).toBeNull();
  // The template's own characters are literals, not patterns.
  expect(uriTemplate("q://x.y?k={v}").match("q://xzy?k=1")).toBeNull();
  expect(uriTemplate("q://x.y?k={v}").match("q://x.y?k=1")).toEqual({ v: "1" });
  expect(uriTemplate("q://{a}-{b}").match("q://1-2")).toEqual({ a: "1", b: "2" });
});

test.each([
  ["text/plain", true],
  ["text/markdown", true],
  ["application/json", true],
  ["application/vnd.api+json", true],
  ["image/svg+xml", true],
  ["APPLICATION/XML", true],
  ["image/png", false],
  ["application/octet-stream", false],
  ["application/pdf", false],
])("%s is served as text: %s", (mimeType, text) => {
  expect(isTextMimeType(mimeType)).toBe(text);
});

const route = { extension: "docs", name: "logo" };

test("a text type's answer is the text; a binary type's base64 is the blob", () => {
  expect(resourceContents("d://r", "text/markdown", "# Hi", route)).toEqual({
    uri: "d://r",
    mimeType: "text/markdown",
    text: "# Hi",
  });
  expect(resourceContents("d://l", "image/png", "iVBORw0KGgo=", route)).toEqual({
    uri: "d://l",
    mimeType: "image/png",
    blob: "iVBORw0KGgo=",
  });
  expect(resourceContents("d://e", "application/octet-stream", "", route)).toMatchObject({ blob: "" });
});

test.each([
  ["text", "not base64!"],
  ["a missing pad", "iVBORw0KGgo"],
  ["a line break", "iVBO\nRw0KGgo="],
  ["the URL-safe alphabet", "iVBORw0K_-o="],
])("a binary type's answer with %s is an MCP error saying what the route must return", (_what, answer) => {
  let thrown: unknown;
  try {
    resourceContents("d://l", "image/png", answer, route);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(McpFailure);
  expect((thrown as McpFailure).message).toContain(
    "route 'docs/logo' serves 'd://l' as image/png, a binary type, so it must return the bytes as base64",
  );
});

// A backtracking matcher took seconds for one ~500-character URI against `x://{a}.{b}.{c}.{d}`
// (and minutes past that): every separator a level-1 template may hold, 2 to 16 variables, URIs
// of the 1024 characters a read may carry made of that separator. Each must answer at once.
describe.each([".", "-", "_", "~", ":", ",", ";", "=", "+", "!", "*", "'", "(", "@", "$", "&"])(
  "a template whose variables are apart by %j matches in one pass",
  (sep) => {
    test.each([2, 4, 8, 16])("%i variables", (n) => {
      const names = Array.from({ length: n }, (_, i) => `v${i}`);
      const t = uriTemplate(`x://${names.map((v) => `{${v}}`).join(sep)}`);
      const filler = `x://${sep.repeat(1020)}`;
      // All separators: each value is the first one it meets (a value holds one character at least), the
      // last takes the rest; ending in a character no value holds, nothing fits — the case that backtracked.
      const split = t.match(filler);
      expect(split?.v0).toBe(sep);
      expect(split?.[`v${n - 1}`]).toBe(sep.repeat(1020 - 2 * (n - 1)));
      expect(t.match(`${filler}/`)).toBeNull();
      // Values between them fit, the first place each separator stands ending each value.
      const values = names.map((_, i) => `${i}`.repeat(8));
      expect(t.match(`x://${values.join(sep)}`)).toEqual(Object.fromEntries(names.map((v, i) => [v, values[i]])));
      // The last value takes the rest, separators and all.
      expect(t.match(`x://${values.join(sep)}${sep}tail`)?.[`v${n - 1}`]).toBe(`${values[n - 1]}${sep}tail`);
    });
  },
);

describe("which route serves a URI: the first in registry order", () => {
  const route = (extension: string, name: string, uri: string) => ({
    extension,
    name,
    description: name,
    resource: { uri, mime_type: "text/plain" },
  });
  /** A session as sessionResources reads it: no context, these routes in registry order. */
  const session = (routes: ReturnType<typeof route>[]) => ({ context: () => [], routes: () => routes }) as never;

  test("a later extension's fixed URI that an earlier one's template reads is not served, and says by whom", () => {
    const served = sessionResources(
      session([route("lib", "item", "docs://items/{id}/v/{version}"), route("late", "hijack", "docs://items/42/v/1")]),
    );
    expect(served.resources).toEqual([]);
    expect(served.templates.map((t) => t.uriTemplate)).toEqual(["docs://items/{id}/v/{version}"]);
    expect(served.shadowed).toEqual([
      { extension: "late", route: "hijack", uri: "docs://items/42/v/1", by: "lib/item" },
    ]);
  });

  test("an earlier extension's fixed URI is served before a later one's template; one's own fixed URI too", () => {
    const served = sessionResources(
      session([
        route("first", "pinned", "docs://items/42/v/1"),
        route("lib", "own", "docs://items/7/v/7"),
        route("lib", "item", "docs://items/{id}/v/{version}"),
      ]),
    );
    expect(served.resources.map((r) => r.uri)).toEqual(["docs://items/42/v/1", "docs://items/7/v/7"]);
    expect(served.shadowed).toEqual([]);
  });
});
