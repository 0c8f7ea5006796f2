/**
 * What a request says besides its request line (broker/egress/method-guard.ts):
 * override headers and `_method`, bodies on bodiless methods, CONNECT.
 */
import { BODILESS_METHODS, guardRequest, OVERRIDE_HEADERS } from "../../broker/egress/method-guard.js";

const URL_ = "https://api.example.com/v1/x";
const guard = (init: { url?: string; method?: string; headers?: Array<[string, string]>; body?: string | null }) =>
  guardRequest({
    url: new URL(init.url ?? URL_),
    method: init.method ?? "GET",
    headers: init.headers ?? [],
    body: init.body === undefined || init.body === null ? null : new TextEncoder().encode(init.body),
  });

describe("override headers", () => {
  const spellings = (name: string) => [
    name,
    name.toUpperCase(),
    name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()),
    ` ${name} `,
  ];

  test.each(
    OVERRIDE_HEADERS.flatMap((name) =>
      spellings(name).flatMap((spelling) => ["GET", "POST", "DELETE"].map((named) => [spelling, named] as const)),
    ),
  )("%s: %s is refused, whatever method it names", (header, named) => {
    const refused = guard({
      method: "GET",
      headers: [
        ["accept", "*/*"],
        [header, named],
      ],
    });
    expect(refused).toMatchObject({ allowed: false, rule: `request:override ${header.trim().toLowerCase()}` });
    expect(refused?.reason).toContain(`'${header.trim().toLowerCase()}'`);
  });

  test("the list names the method and URL overrides", () => {
    expect(OVERRIDE_HEADERS).toEqual(
      expect.arrayContaining([
        "x-http-method-override",
        "x-http-method",
        "x-method-override",
        "x-original-url",
        "x-rewrite-url",
      ]),
    );
  });

  test.each(["_method", "_METHOD"])("the query parameter %s is refused", (key) => {
    expect(guard({ method: "POST", url: `${URL_}?${key}=DELETE`, body: "x" })).toMatchObject({
      rule: "request:override _method",
    });
  });

  test("other headers and query parameters pass", () => {
    expect(
      guard({
        headers: [
          ["x-method", "GET"],
          ["x-http-methods", "1"],
          ["authorization", "Bearer t"],
        ],
        url: `${URL_}?method=DELETE&x_method=1`,
      }),
    ).toBeNull();
  });
});

describe("bodies", () => {
  test.each(BODILESS_METHODS.flatMap((m) => [m, m.toLowerCase()]))(
    "%s with a body is refused, naming the method",
    (method) => {
      const refused = guard({ method, body: "smuggled" });
      expect(refused).toMatchObject({ allowed: false, rule: "request:body" });
      expect(refused?.reason).toContain(`a ${method.toUpperCase()} request carries no body (this one has 8 bytes)`);
    },
  );

  test.each(BODILESS_METHODS)("%s without a body, or with an empty one, passes", (method) => {
    expect(guard({ method })).toBeNull();
    expect(guard({ method, body: "" })).toBeNull();
  });

  test.each(["POST", "PUT", "PATCH", "DELETE"])("%s with a body passes", (method) => {
    expect(guard({ method, body: "data" })).toBeNull();
  });
});

test("CONNECT is refused", () => {
  expect(guard({ method: "connect" })).toMatchObject({ allowed: false, rule: "request:method" });
});
