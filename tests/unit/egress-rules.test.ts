/**
 * Egress rule syntax and URL matching (addresses are judged in judge.ts).
 */
import { matchesUrl, parseRule, RuleError, type Target } from "../../broker/egress/rules.js";
import { targetOf } from "../../broker/egress/judge.js";

function target(url: string, method = "GET"): Target {
  const t = targetOf(new URL(url), method);
  if ("error" in t) throw new Error(t.error);
  return t;
}

const allows = (rule: string, url: string, method = "GET") => matchesUrl(parseRule(rule), target(url, method));

describe("parseRule()", () => {
  test.each([
    [
      "https://api.example.com",
      { scheme: "https", port: 443, pathPrefix: "", methods: null, host: { kind: "name", name: "api.example.com" } },
    ],
    ["http://api.example.com:8080/v1/", { scheme: "http", port: 8080, pathPrefix: "/v1" }],
    ["GET,head https://api.example.com", { methods: ["GET", "HEAD"] }],
    ["https://*.example.com", { host: { kind: "wildcard", suffix: "example.com" } }],
    ["https://BÜCHER.example", { host: { kind: "name", name: "xn--bcher-kva.example" } }],
    ["https://api.example.com.", { host: { kind: "name", name: "api.example.com" } }],
    ["http://10.0.0.5", { host: { kind: "ip", address: "10.0.0.5" } }],
    ["http://[fd00::1]:8080", { host: { kind: "ip", address: "fd00::1" }, port: 8080 }],
    ["http://[10.20.0.0/16]", { host: { kind: "cidr", cidr: "10.20.0.0/16" } }],
  ])("parses %s", (text, expected) => {
    expect(parseRule(text)).toMatchObject(expected);
  });

  test.each([
    ["*", "expected scheme://host"],
    ["https://*", "every host"],
    ["https://*.com", "top-level domain"],
    ["https://*.co.uk", "co.uk"],
    ["https://co.uk", "co.uk"],
    ["ftp://files.example.com", "scheme 'ftp' is not allowed"],
    ["https://user@api.example.com", "userinfo"],
    ["https://api.example.com/v1?x=1", "query"],
    ["https://api.example.com:99999", "port must be 1-65535"],
    ["https://api.example.com/v1/../admin", "dot segments"],
    ["https://api.example.com/v1%2Fadmin", "encoded slashes"],
    ["https://a.*.example.com", "leftmost"],
    ["https://[0.0.0.0/0]", "unspecified"],
    ["https://[10.0.0.0/8]", "at most /16"],
    ["api.example.com", "expected scheme://host"],
  ])("refuses %s, saying why", (text, why) => {
    expect(() => parseRule(text)).toThrow(RuleError);
    expect(() => parseRule(text)).toThrow(why);
  });

  test("an operator deny may be a bare host pattern: any scheme and port", () => {
    const rule = parseRule("*.evil.example", { allowBroad: true });
    expect(rule).toMatchObject({ scheme: "*", port: null });
    expect(matchesUrl(rule, target("http://a.evil.example:8080/x"))).toBe(true);
    expect(matchesUrl(rule, target("https://b.c.evil.example/"))).toBe(true);
    expect(matchesUrl(rule, target("https://evil.example.com/"))).toBe(false);
  });
});

describe("matchesUrl()", () => {
  test("a wildcard covers names under it at any depth, never the apex", () => {
    expect(allows("https://*.example.com", "https://api.example.com/")).toBe(true);
    expect(allows("https://*.example.com", "https://a.b.example.com/")).toBe(true);
    expect(allows("https://*.example.com", "https://example.com/")).toBe(false);
    expect(allows("https://*.example.com", "https://badexample.com/")).toBe(false);
  });

  test("a path prefix matches on segment boundaries", () => {
    expect(allows("https://api.example.com/v1", "https://api.example.com/v1")).toBe(true);
    expect(allows("https://api.example.com/v1", "https://api.example.com/v1/x?q=1")).toBe(true);
    expect(allows("https://api.example.com/v1", "https://api.example.com/v10")).toBe(false);
    expect(allows("https://api.example.com/v1", "https://api.example.com/v1/../admin")).toBe(false); // WHATWG resolves it to /admin
    expect(allows("https://api.example.com/v1", "https://api.example.com/v1/%2e%2e/admin")).toBe(false);
    expect(allows("https://api.example.com/v1", "https://api.example.com/v1%2F..%2Fadmin")).toBe(false);
  });

  test("scheme and port must be the rule's; the default port is normalised", () => {
    expect(allows("https://api.example.com", "http://api.example.com/")).toBe(false);
    expect(allows("https://api.example.com", "https://api.example.com:443/")).toBe(true);
    expect(allows("https://api.example.com", "https://api.example.com:8443/")).toBe(false);
  });

  test("methods, when listed, limit the rule", () => {
    expect(allows("GET https://api.example.com", "https://api.example.com/", "get")).toBe(true);
    expect(allows("GET https://api.example.com", "https://api.example.com/", "POST")).toBe(false);
  });

  test("IDN and trailing dots compare in normalised A-label form", () => {
    expect(allows("https://xn--bcher-kva.example", "https://bücher.example/")).toBe(true);
    expect(allows("https://bücher.example", "https://xn--bcher-kva.example./")).toBe(true);
  });
});

describe("targetOf()", () => {
  test.each([
    ["http://user:pw@api.example.com/", "userinfo"],
    ["http://api.example.com@evil.example/", "userinfo"],
    ["file:///etc/passwd", "scheme 'file'"],
    ["data:text/plain,hi", "scheme 'data'"],
  ])("refuses %s", (url, why) => {
    const t = targetOf(new URL(url), "GET");
    expect("error" in t && t.error).toContain(why);
  });

  test("IP literal hosts have no name, whatever their encoding", () => {
    for (const url of [
      "http://2130706433/",
      "http://0x7f.1/",
      "http://0177.0.0.1/",
      "http://127.1/",
      "http://[::ffff:127.0.0.1]/",
    ]) {
      expect(target(url).name).toBeNull();
    }
  });
});
