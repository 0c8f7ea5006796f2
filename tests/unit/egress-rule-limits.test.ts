/**
 * What an allow rule may name (address-rule.ts, wildcard-dns.ts), the
 * operator's reach switches (reach.ts, policy.ts), the judged answers in a
 * verdict (judge.ts) and the decoded rules of `tether review` (describe-rule.ts).
 * Each limit is probed as a class: generated ranges on both sides of it.
 */
import { parseOperatorPolicy } from "../../broker/caps/policy.js";
import { MAX_V4_PREFIX, MAX_V6_PREFIX } from "../../broker/egress/address-rule.js";
import { describeRule } from "../../broker/egress/describe-rule.js";
import { judge, type EgressPolicy, type Resolver } from "../../broker/egress/judge.js";
import { ALLOW_PRIVATE, NO_REACH, reachOf } from "../../broker/egress/reach.js";
import { parseRule, RuleError } from "../../broker/egress/rules.js";
import { DYNAMIC_DNS, WILDCARD_DNS } from "../../broker/egress/wildcard-dns.js";

const refused = (rule: string) => {
  try {
    parseRule(rule);
  } catch (err) {
    if (err instanceof RuleError) return err.message;
    throw err;
  }
  return null;
};

describe("allow rules that are broader than they look are refused, saying what to write", () => {
  test.each([
    ["http://0.0.0.0:8080", "unspecified"],
    ["http://[::]:8080", "unspecified"],
    ["http://[0.0.0.0/8]", "unspecified"],
    ["http://[0.0.0.0/1]", "unspecified"],
    ["http://[::ffff:0.0.0.0]", "unspecified"],
    ["http://[64:ff9b::]", "unspecified"],
    ["http://[2002::1]", "unspecified"], // 6to4 of 0.0.0.0
    ["http://[::ffff:0:0/96]", "reaches every IPv4 address (through the ipv4-mapped form)"],
    ["http://[::/1]", "reaches every IPv4 address"],
    ["http://[::/64]", "reaches every IPv4 address"],
    ["http://[64:ff9b::/96]", "nat64"],
    ["http://[64:ff9b:1:5::/64]", "nat64"],
    ["http://[2002::/16]", "6to4"],
    ["http://[10.0.0.0/8]", "at most /16 for IPv4"],
    ["http://[64:ff9b::a00:0/104]", "it carries 10.0.0.0/8 (nat64)"],
    ["http://[2002:a00::/24]", "it carries 10.0.0.0/8 (6to4)"],
    ["http://[::ffff:10.0.0.0/104]", "at most /16 for IPv4"],
    ["http://[fd00::/47]", "at most /48 for IPv6"],
    ["http://[127.0.0.0/24]", "covers loopback addresses"],
    ["http://[127.0.0.0/31]", "covers loopback addresses"],
    ["http://[169.254.1.0/24]", "covers link-local addresses"],
    ["http://[169.254.169.0/24]", "link-local and metadata"],
    ["http://[100.100.0.0/16]", "metadata"],
    ["http://[fd00:ec2::/64]", "metadata"],
    ["http://[fe80::/64]", "link-local"],
    ["http://[::ffff:127.0.0.0/120]", "loopback"],
    ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]", "Teredo"],
    ["http://2852039166", "is the IP address 169.254.169.254 written another way: write it as 169.254.169.254"],
    ["http://0xa9fea9fe", "write it as 169.254.169.254"],
    ["http://169.254.43518", "write it as 169.254.169.254"],
    ["http://0177.0.0.1", "write it as 127.0.0.1"],
    ["https://*.nip.io", "wildcard-DNS"],
    ["https://*.sslip.io", "wildcard-DNS"],
    ["https://*.a.b.nip.io", "'nip.io'"],
    ["https://*.duckdns.org", "dynamic-DNS"],
    ["https://*.lvh.me", "wildcard-DNS"],
  ])("%s", (rule, why) => {
    const message = refused(rule);
    expect(message).toContain(`egress rule '${rule}'`);
    expect(message).toContain(why);
  });

  test.each([
    "http://127.0.0.1:8080",
    "http://[::1]:8080",
    "http://169.254.1.1",
    "http://169.254.169.254", // reachable only when the operator lists it too
    "http://[10.20.0.0/16]",
    "http://[192.168.4.0/24]",
    "http://[fd00:1:2::/48]",
    "http://[64:ff9b::a00:0/120]",
    "http://[2002:a01:203::/48]",
    "http://[::ffff:10.1.2.3]",
    "https://api.1.2.3.4.nip.io", // an exact name: judged by its answer like any other
    "https://home.duckdns.org",
  ])("%s is allowed", (rule) => {
    expect(refused(rule)).toBeNull();
  });

  test("operator denies may be as broad as they like", () => {
    for (const rule of [
      "http://[0.0.0.0/0]",
      "http://[::ffff:0:0/96]",
      "*.nip.io",
      "http://[127.0.0.0/8]",
      "[::/0]",
      "2852039166",
    ]) {
      expect(() => parseRule(rule, { allowBroad: true })).not.toThrow();
    }
  });

  test("generated: every IPv4 prefix wider than the limit is refused, every one at or under it accepted (in a private range)", () => {
    for (let prefix = 0; prefix <= 32; prefix += 1) {
      const base = prefix < 8 ? "0.0.0.0" : "10.0.0.0";
      const rule = `http://[${base}/${prefix}]`;
      if (prefix < MAX_V4_PREFIX) expect([rule, refused(rule)]).toEqual([rule, expect.any(String)]);
      else expect([rule, refused(rule)]).toEqual([rule, null]);
      // The same range written as NAT64 (well-known), 6to4 and mapped is measured on the IPv4.
      for (const written of [
        `64:ff9b::a00:0/${96 + prefix}`,
        `2002:a00::/${16 + prefix}`,
        `::ffff:a00:0/${96 + prefix}`,
      ]) {
        if (prefix < 8) continue;
        const r = `http://[${written}]`;
        if (prefix < MAX_V4_PREFIX)
          expect([r, refused(r)]).toEqual([r, expect.stringContaining("at most /16 for IPv4")]);
        else expect([r, refused(r)]).toEqual([r, null]);
      }
    }
  });

  test("generated: every IPv6 prefix wider than /48 is refused, /48 and narrower accepted (unique local)", () => {
    for (let prefix = 8; prefix <= 128; prefix += 1) {
      const rule = `http://[fd00::/${prefix}]`;
      if (prefix < MAX_V6_PREFIX)
        expect([rule, refused(rule)]).toEqual([rule, expect.stringContaining("at most /48 for IPv6")]);
      else expect([rule, refused(rule)]).toEqual([rule, null]);
    }
  });

  test("generated: every range over loopback, link-local or metadata is refused; each single address is not", () => {
    const singles = ["127.0.0.1", "127.255.0.9", "169.254.1.1", "169.254.169.254", "100.100.100.200", "168.63.129.16"];
    for (const ip of singles) {
      expect(refused(`http://${ip}`)).toBeNull();
      const [a, b, c, d] = ip.split(".").map(Number) as [number, number, number, number];
      const value = ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
      for (let prefix = 16; prefix < 32; prefix += 1) {
        const size = 2 ** (32 - prefix);
        const base = value - (value % size);
        const text = `${base >>> 24}.${(base >>> 16) & 0xff}.${(base >>> 8) & 0xff}.${base & 0xff}/${prefix}`;
        expect([text, refused(`http://[${text}]`)]).toEqual([
          text,
          expect.stringMatching(/loopback|link-local|metadata/),
        ]);
      }
    }
  });

  test("generated: a wildcard at or under each listed wildcard/dynamic DNS domain is refused", () => {
    for (const domain of [...WILDCARD_DNS, ...DYNAMIC_DNS]) {
      for (const rule of [`https://*.${domain}`, `https://*.x.${domain}`, `https://*.10.0.0.1.${domain}`]) {
        expect([rule, refused(rule)]).toEqual([rule, expect.stringContaining(`'${domain}', a `)]);
      }
    }
  });
});

describe("operator reach in policy.toml", () => {
  const policy = (net: string) => parseOperatorPolicy(`[net]\n${net}\n`, "policy.toml");

  test("the default reaches no non-public class and no metadata", () => {
    expect(parseOperatorPolicy("", "policy.toml").reach).toEqual(NO_REACH);
  });

  test("reach switches classes one by one", () => {
    expect([...policy('reach = ["loopback"]').reach.classes]).toEqual(["loopback"]);
    expect([...policy('reach = ["private", "cgnat"]').reach.classes]).toEqual(["private", "cgnat"]);
  });

  test("allow_private = true is loopback, private, link_local and cgnat, never metadata", () => {
    const reach = policy("allow_private = true").reach;
    expect([...reach.classes].sort()).toEqual([...ALLOW_PRIVATE].sort());
    expect(reach.metadata).toEqual([]);
    expect([...policy('allow_private = true\nreach = ["documentation"]').reach.classes]).toContain("documentation");
  });

  test("metadata is listed address by address", () => {
    expect(policy('metadata = ["169.254.169.254", "fd00:ec2::254"]').reach.metadata.map((m) => m.cidr)).toEqual([
      "169.254.169.254/32",
      "fd00:ec2::254/128",
    ]);
  });

  test.each([
    ['reach = ["metadata"]', "net.reach.0", "listed one by one in [net] metadata"],
    ['reach = ["unspecified"]', "net.reach.0", "never reachable"],
    ['reach = ["lan"]', "net.reach.0", 'must be one of "loopback"'],
    ['metadata = ["10.0.0.1"]', "net.metadata.0", "must be a cloud metadata address"],
    ['metadata = ["169.254.169.0/24"]', "net.metadata.0", "written as one address"],
    ['deny = ["http://[10.0.0.0/33]"]', "net.deny.0", "not a CIDR"],
  ])("%s is refused: %s", (net, where, why) => {
    expect(() => policy(net)).toThrow(where);
    expect(() => policy(net)).toThrow(why);
  });
});

describe("judge: reach, metadata, unspecified, and every judged answer", () => {
  const url = new URL("http://svc.example:8080/x");
  const answers =
    (...list: string[]): Resolver =>
    async () =>
      list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }) as const);
  const base = (rules: string[], reach = NO_REACH, deny: string[] = []): EgressPolicy => ({
    extension: "t",
    approved: [parseRule("http://svc.example:8080"), ...rules.map((r) => parseRule(r))],
    operatorDeny: deny.map((r) => parseRule(r, { allowBroad: true })),
    reach,
    offline: false,
    sessionAllow: null,
  });

  test("the allowed verdict lists every answer with its class", async () => {
    const verdict = await judge(
      url,
      "GET",
      base(["http://[10.1.0.0/16]:8080"], reachOf(["private"], [], false)),
      answers("93.184.216.34", "10.1.2.3", "2606:4700::1"),
    );
    expect(verdict).toMatchObject({
      allowed: true,
      address: "93.184.216.34",
      family: 4,
      addresses: [
        { address: "93.184.216.34", family: 4, class: "public" },
        { address: "10.1.2.3", family: 4, class: "private" },
        { address: "2606:4700::1", family: 6, class: "public" },
      ],
    });
  });

  test("a named metadata address needs the operator's listing; allow_private is not enough", async () => {
    const rules = ["http://169.254.169.254:8080"];
    for (const answer of ["169.254.169.254", "::ffff:a9fe:a9fe", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1"]) {
      expect(await judge(url, "GET", base(rules, reachOf([], [], true)), answers(answer))).toMatchObject({
        allowed: false,
        rule: "operator:no-metadata",
      });
      expect(
        await judge(url, "GET", base(rules, reachOf([], ["169.254.169.254"], false)), answers(answer)),
      ).toMatchObject({ allowed: true, addresses: [{ class: "metadata" }] });
      // Listing another metadata address does not reach this one.
      expect(
        await judge(url, "GET", base(rules, reachOf([], ["169.254.170.2"], false)), answers(answer)),
      ).toMatchObject({ allowed: false, rule: "operator:no-metadata" });
    }
  });

  test("an unspecified answer is never reached, whatever names it", async () => {
    const policy = {
      ...base([], reachOf(["loopback", "private", "link_local", "cgnat", "reserved"], [], true)),
      approved: [parseRule("http://svc.example:8080"), parseRule("http://[0.0.0.0/8]:8080", { allowBroad: true })],
    };
    for (const answer of ["0.0.0.0", "::", "::ffff:0.0.0.0", "64:ff9b::1"]) {
      expect(await judge(url, "GET", policy, answers(answer))).toMatchObject({
        allowed: false,
        rule: "address:unspecified",
      });
    }
  });

  test("each class needs its own switch", async () => {
    const rules = [
      "http://127.0.0.1:8080",
      "http://[10.1.0.0/16]:8080",
      "http://169.254.1.1:8080",
      "http://[100.64.0.0/16]:8080",
    ];
    const cases: Array<[string, string]> = [
      ["127.0.0.1", "loopback"],
      ["10.1.2.3", "private"],
      ["169.254.1.1", "link_local"],
      ["100.64.0.9", "cgnat"],
    ];
    for (const [answer, cls] of cases) {
      const closed = await judge(
        url,
        "GET",
        base(
          rules,
          reachOf(["private", "loopback", "link_local", "cgnat"].filter((c) => c !== cls) as never, [], false),
        ),
        answers(answer),
      );
      expect(closed).toMatchObject({ allowed: false, rule: "operator:no-private" });
      expect(closed.allowed === false && closed.reason).toContain(`add "${cls}" to [net] reach`);
      expect(await judge(url, "GET", base(rules, reachOf([cls] as never, [], false)), answers(answer))).toMatchObject({
        allowed: true,
      });
    }
  });

  test("an IPv4 deny refuses the address in every embedding; a deny written as NAT64 refuses the plain IPv4", async () => {
    const policy = base(["http://127.0.0.1:8080"], reachOf(["loopback"], [], false), ["[127.0.0.0/8]"]);
    for (const answer of [
      "127.0.0.1",
      "::ffff:7f00:1",
      "::7f00:1",
      "::ffff:0:7f00:1",
      "64:ff9b::7f00:1",
      "64:ff9b:1:1::7f00:1",
      "2002:7f00:1::",
      "2001:0:4136:e378:8000:63bf:80ff:fffe",
    ]) {
      expect(await judge(url, "GET", policy, answers(answer))).toMatchObject({
        allowed: false,
        rule: "operator:deny [127.0.0.0/8]",
      });
    }
    const nat64Deny = base(["http://127.0.0.1:8080"], reachOf(["loopback"], [], false), ["[64:ff9b::7f00:0/104]"]);
    expect(await judge(url, "GET", nat64Deny, answers("127.0.0.1"))).toMatchObject({
      allowed: false,
      rule: "operator:deny [64:ff9b::7f00:0/104]",
    });
  });
});

describe("describeRule (tether review)", () => {
  test.each([
    [
      "https://API.example.com/v1/",
      "https://api.example.com:443/v1",
      "the host api.example.com, port 443, paths under /v1, any method",
    ],
    ["GET,HEAD http://bücher.example", "GET,HEAD http://xn--bcher-kva.example:80", "GET, HEAD"],
    ["https://*.example.com", "https://*.example.com:443", "any name under example.com (not example.com itself)"],
    ["http://[10.20.0.0/16]:9000", "http://[10.20.0.0/16]:9000", "65,536 addresses (/16 of IPv4); classes: private"],
    [
      "http://[::ffff:169.254.169.254]",
      "http://169.254.169.254:80",
      "1 address; classes: metadata (metadata: reachable only if the operator lists the address in [net] metadata)",
    ],
    ["http://[64:ff9b::a00:0/120]", "http://[64:ff9b::a00:0/120]:80", "carrying 10.0.0.0/24 (nat64)"],
    ["http://[fd00:1:2::/48]", "http://[fd00:1:2::/48]:80", "2^80 addresses (/48 of IPv6); classes: private"],
  ])("%s", (rule, canonical, summary) => {
    const d = describeRule(rule);
    expect(d.canonical).toBe(canonical);
    expect(d.summary).toContain(summary);
  });

  test("a rule refused today is shown as allowing nothing, with why", () => {
    expect(describeRule("http://2852039166")).toMatchObject({
      canonical: null,
      summary: expect.stringContaining("REFUSED, allows nothing"),
    });
  });
});
