/**
 * Egress host names: one normal form for rules and URLs (IDN, case, trailing
 * dot), and host patterns that would cover a whole public suffix.
 */
import fc from "fast-check";
import { getPublicSuffix } from "tldts";
import { parseIpLiteral } from "../../broker/egress/ip-literal.js";
import {
  InvalidHostError,
  isListedSuffix,
  isTooBroad,
  normaliseHost,
  suffixBelow,
} from "../../broker/egress/hostname.js";

const label63 = "a".repeat(63);
/** 253 characters: 3 × 63 + 61 + 3 dots. */
const name253 = [label63, label63, label63, "b".repeat(61)].join(".");

describe("normaliseHost", () => {
  test.each<[string, string]>([
    ["example.com", "example.com"],
    ["Example.COM", "example.com"],
    ["EXAMPLE.COM", "example.com"],
    ["example.com.", "example.com"],
    ["Example.Com.", "example.com"],
    ["api.example.com", "api.example.com"],
    ["a.b.c.d.e.f.example", "a.b.c.d.e.f.example"],
    ["localhost", "localhost"],
    ["localhost.", "localhost"],
    // IDN → A-labels
    ["bücher.example", "xn--bcher-kva.example"],
    ["BÜCHER.example", "xn--bcher-kva.example"],
    ["Bücher.Example.", "xn--bcher-kva.example"],
    ["xn--bcher-kva.example", "xn--bcher-kva.example"],
    ["XN--BCHER-KVA.EXAMPLE", "xn--bcher-kva.example"],
    ["faß.de", "xn--fa-hia.de"], // UTS #46 non-transitional, as WHATWG
    ["公司.cn", "xn--55qx5d.cn"],
    ["пример.рф", "xn--e1afmkfd.xn--p1ai"],
    ["é.example", "xn--9ca.example"],
    ["e\u0301.example", "xn--9ca.example"], // NFC
    // width and dot mapping, as WHATWG
    ["ＥＸＡＭＰＬＥ.com", "example.com"],
    ["example\u3002com", "example.com"],
    ["example\uff0ecom", "example.com"],
    ["example.com\u3002", "example.com"],
    ["\u2167.example", "viii.example"],
    // characters the URL parser keeps
    ["a_b.example.com", "a_b.example.com"],
    ["_dmarc.example.com", "_dmarc.example.com"],
    ["-a.example.com", "-a.example.com"],
    ["a-.example.com", "a-.example.com"],
    ["a--b.example", "a--b.example"],
    // names that look numeric but are not IPv4 to the URL parser
    ["1e1", "1e1"],
    ["123.example", "123.example"],
    ["0x7f.example", "0x7f.example"],
    ["foo.0x1g", "foo.0x1g"],
    // limits
    [`${label63}.example`, `${label63}.example`],
    [name253, name253],
    [`${name253}.`, name253],
  ])("%j → %s", (host, expected) => {
    expect(normaliseHost(host)).toBe(expected);
    expect(normaliseHost(expected)).toBe(expected); // idempotent
  });

  test.each<[string, string]>([
    ["", "empty"],
    [".", "no labels"],
    ["..", "empty label"],
    ["example.com..", "two trailing dots"],
    [".example.com", "leading dot"],
    ["a..b", "empty label"],
    ["example.com.\u3002", "two trailing dots, one ideographic"],
    ["\u00ad.com", "a label that maps to nothing"],
    [`${"a".repeat(64)}.example`, "label of 64"],
    [`${name253}a`, "name of 254"],
    [`x.${name253}`, "name of 255"],
    ["a/b", "'/' (domainToASCII would truncate to 'a')"],
    ["example.com/evil", "path"],
    ["a?b", "'?'"],
    ["a#b", "'#'"],
    ["a\\b", "'\\'"],
    ["user@example.com", "userinfo"],
    ["example.com:80", "port"],
    ["a b.com", "space"],
    ["a\tb.com", "tab (domainToASCII would drop it)"],
    ["a\nb.com", "newline"],
    ["a\u0000b.com", "NUL"],
    ["a%41.com", "percent-encoding"],
    ["a*b.com", "'*' inside a label"],
    ["*.example.com", "a pattern, not a name"],
    ["*", "a pattern"],
    ["[::1]", "an IPv6 literal"],
    ["::1", "an IPv6 address"],
    ["127.0.0.1", "an IPv4 address"],
    ["127.0.0.1.", "an IPv4 address with a trailing dot"],
    ["127.1", "short IPv4"],
    ["0x7f.1", "hex IPv4"],
    ["2130706433", "decimal IPv4"],
    ["example.123", "ends in a number"],
    ["foo.0x7f", "ends in a hex number"],
    ["1.2.3.4.5", "ends in a number, five parts"],
    ["\uff11\uff12\uff17.\uff10.\uff10.\uff11", "full-width IPv4"],
    ["xn--zz.example", "bad punycode"],
    ["xn--a.example", "bad punycode"],
    ["a\uff0fb.com", "full-width solidus"],
    ["a\uff20b.com", "full-width commercial at"],
    ["a\u2024b.com", "one-dot leader"],
    ["a\u2488b.com", "'⒈' maps to '1.'... and is disallowed"],
  ])("%j is refused (%s)", (host) => {
    expect(() => normaliseHost(host)).toThrow(InvalidHostError);
  });

  test("a non-string is refused", () => {
    expect(() => normaliseHost(42 as unknown as string)).toThrow(InvalidHostError);
  });
});

describe("normaliseHost agrees with the WHATWG URL parser", () => {
  test.each([
    "bücher.example",
    "Example.COM.",
    "ＥＸＡＭＰＬＥ.com",
    "faß.de",
    "公司.cn",
    "a_b.example.com",
    "example\u3002com",
    "a\u200bb.example",
  ])("%j", (host) => {
    const hostname = new URL(`http://${host}/`).hostname;
    expect(normaliseHost(host)).toBe(normaliseHost(hostname));
    expect(hostname.replace(/\.$/, "")).toBe(normaliseHost(host));
  });

  test("the URL parser keeps hosts that normaliseHost refuses (so a request to them is refused)", () => {
    for (const host of ["example.com..", ".example.com", "a..b"]) {
      expect(() => new URL(`http://${host}/`)).not.toThrow();
      expect(() => normaliseHost(new URL(`http://${host}/`).hostname)).toThrow(InvalidHostError);
    }
  });

  test("property: whatever normaliseHost accepts, the URL parser accepts as the same name", () => {
    const unit = fc.constantFrom(
      ..."abcXYZ019-_",
      "ü",
      "ß",
      "é",
      "公",
      "Ａ",
      "\uff11",
      "ς",
      "\u0301",
      ".",
      ".",
      "\u3002",
    );
    fc.assert(
      fc.property(fc.string({ unit, minLength: 1, maxLength: 24 }), (raw) => {
        let normal: string | null;
        try {
          normal = normaliseHost(raw);
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidHostError);
          normal = null;
        }
        let hostname: string | null;
        try {
          hostname = new URL(`http://${raw}/`).hostname;
        } catch {
          hostname = null;
        }
        if (normal !== null) {
          expect(hostname).not.toBeNull();
          expect(hostname!.replace(/\.$/, "")).toBe(normal);
          expect(normaliseHost(normal)).toBe(normal);
          expect(parseIpLiteral(hostname!)).toBeNull();
        } else if (hostname !== null && parseIpLiteral(hostname) === null) {
          // The URL parser took it as a name; normaliseHost refused it: it must be refused as a URL host too.
          expect(() => normaliseHost(hostname!)).toThrow(InvalidHostError);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

describe("isTooBroad", () => {
  test.each<[string, RegExp]>([
    ["*", /every host/],
    ["*.", /every host/],
    ["*.com", /top-level domain 'com'/],
    ["*.COM", /top-level domain 'com'/],
    ["*.com.", /top-level domain 'com'/],
    ["*.org", /top-level domain/],
    ["*.internal", /top-level domain 'internal'/],
    ["*.localhost", /top-level domain/],
    ["*.рф", /top-level domain 'xn--p1ai'/],
    ["*.xn--p1ai", /top-level domain 'xn--p1ai'/],
    ["*.co.uk", /public suffix 'co\.uk'/],
    ["*.CO.UK.", /public suffix 'co\.uk'/],
    ["*.com.au", /public suffix 'com\.au'/],
    ["*.公司.cn", /public suffix 'xn--55qx5d\.cn'/],
    ["*.github.io", /public suffix 'github\.io'/],
    ["*.githubusercontent.com", /public suffix 'githubusercontent\.com'/],
    ["*.blogspot.com", /public suffix 'blogspot\.com'/],
    ["*.googleapis.com", /public suffix 'googleapis\.com'/],
    ["*.s3.amazonaws.com", /public suffix 's3\.amazonaws\.com'/],
    ["*.foo.ck", /public suffix 'foo\.ck'/], // wildcard rule *.ck
    ["*.kawasaki.jp", /public suffix/],
    ["*.amazonaws.com", /covers the public suffix '[^']+\.amazonaws\.com'/],
    ["*.uk", /top-level domain 'uk'/],
    ["com", /'com' is a public suffix/],
    ["COM.", /'com' is a public suffix/],
    ["co.uk", /'co\.uk' is a public suffix/],
    ["github.io", /'github\.io' is a public suffix/],
    ["s3.amazonaws.com", /public suffix/],
    ["foo.ck", /public suffix/],
    ["xn--p1ai", /public suffix/],
    ["рф", /'xn--p1ai' is a public suffix/],
  ])("%j is too broad", (pattern, reason) => {
    expect(isTooBroad(pattern)).toMatch(reason);
  });

  test.each([
    "*.example.com",
    "api.example.com",
    "example.com",
    "*.api.example.com",
    "*.example.co.uk",
    "example.co.uk",
    "*.foo.github.io",
    "foo.github.io",
    "raw.githubusercontent.com",
    "*.bücher.example",
    "localhost",
    "intranet",
    "*.corp.example.internal",
    "www.ck", // an exception rule: a registrable name, not a suffix
    "*.www.ck",
    "*.a_b.example.com",
  ])("%j is fine", (pattern) => {
    expect(isTooBroad(pattern)).toBeNull();
  });

  test.each([
    "",
    "**.com",
    "*.*.com",
    "foo.*.com",
    "*foo.com",
    "f*.com",
    "*.example.com..",
    "*..com",
    "*.127.0.0.1",
    "127.0.0.1",
    "*.a/b",
    "* .com",
    ".*.com",
  ])("%j is not a host pattern (throws)", (pattern) => {
    expect(() => isTooBroad(pattern)).toThrow(InvalidHostError);
  });
});

describe("the public suffix trie as read from tldts", () => {
  test.each(["com", "uk", "io", "amazonaws.com", "jp", "kawasaki.jp"])("%s has a listed suffix below it", (name) => {
    const below = suffixBelow(name);
    expect(below).not.toBeNull();
    expect(below!.endsWith(`.${name}`)).toBe(true);
    if (!below!.includes("*")) {
      // tldts's own API agrees that what the trie walk found is a suffix.
      expect(getPublicSuffix(below!, { allowPrivateDomains: true })).toBe(below);
      expect(isListedSuffix(below!)).toBe(true);
    }
  });

  test.each(["example.com", "example.co.uk", "foo.github.io", "localhost", "nonexistent-tld-for-tests"])(
    "%s has no listed suffix below it",
    (name) => {
      expect(suffixBelow(name)).toBeNull();
    },
  );

  test.each<[string, boolean]>([
    ["com", true],
    ["co.uk", true],
    ["github.io", true],
    ["foo.ck", true],
    ["www.ck", false],
    ["example.com", false],
    ["localhost", false],
    ["internal", false],
  ])("isListedSuffix(%s) = %s", (name, listed) => {
    expect(isListedSuffix(name)).toBe(listed);
  });
});
