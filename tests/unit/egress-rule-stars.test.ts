/**
 * `*` in a rule's path. A rule's path is a prefix; authors write "everything
 * under" as `/*` (docs, review's "paths under …", the test kit's routes), so
 * a trailing `/*` or `/**` is that same prefix, and any other `*` in a path is
 * refused at parse with the rule to write instead — never a rule that silently
 * matches only a literal `*`. Probes: every spelling of the trailing star, on
 * every origin form (default and explicit port, methods), and every place an
 * inner star can stand.
 */
import { matchesUrl, parseRule, RuleError, type Target } from "../../broker/egress/rules.js";

const ORIGINS = ["https://api.example.com", "http://api.example.com:8080", "GET,POST https://api.example.com:8443"];
const PREFIXES = ["", "/v1", "/v1/items", "/a-b/c_d.e"];
const TRAILING = ["/*", "/**", "/*/", "//*", "/*/*", "/**/*"];

function target(rule: string, path: string): Target {
  const m = /^(?:([A-Z,]+) )?(https?):\/\/([^/:]+)(?::(\d+))?/.exec(rule)!;
  const scheme = m[2] as "http" | "https";
  return {
    method: m[1]?.split(",")[0] ?? "GET",
    scheme,
    name: m[3]!,
    port: m[4] !== undefined ? Number(m[4]) : scheme === "https" ? 443 : 80,
    path,
  };
}

describe.each(ORIGINS)("%s", (origin) => {
  for (const prefix of PREFIXES) {
    test.each(TRAILING)(`${prefix || "(root)"} + %s is the prefix ${prefix || "(every path)"}`, (stars) => {
      const starred = parseRule(`${origin}${prefix}${stars}`);
      const plain = parseRule(`${origin}${prefix}`);
      expect(starred.pathPrefix).toBe(plain.pathPrefix);
      const rule = `${origin}${prefix}${stars}`;
      // What "everything under" means: the prefix itself, anything below it, nothing beside it.
      for (const path of [`${prefix}/x`, `${prefix}/x/y`, prefix === "" ? "/" : prefix])
        expect(matchesUrl(starred, target(rule, path))).toBe(true);
      if (prefix !== "") expect(matchesUrl(starred, target(rule, `${prefix}x`))).toBe(false);
    });
  }

  const INNER = ["/v*", "/v1/*.json", "/v1/*/items", "/*x", "/v1/**/items", "/v1/it*ms/"];
  test.each(INNER)("an inner star (%s) is refused, naming a rule that parses", (path) => {
    let message = "";
    try {
      parseRule(`${origin}${path}`);
    } catch (err) {
      expect(err).toBeInstanceOf(RuleError);
      message = (err as Error).message;
    }
    expect(message).toContain("'*' inside a path matches nothing but a literal '*'");
    const suggested = /so '([^']+)' allows/.exec(message)?.[1];
    expect(suggested).toBeDefined();
    const rule = parseRule(suggested!);
    expect(rule.methods).toEqual(parseRule(origin).methods);
    expect(rule.port).toBe(parseRule(origin).port);
    // The suggestion covers what the author meant: the path up to the star's segment.
    expect(path.startsWith(rule.pathPrefix)).toBe(true);
  });
});
