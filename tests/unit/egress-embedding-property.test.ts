/**
 * Property: for random IPv4 addresses written in every form — URL host
 * spellings (dotted, integer, hex, octal, short) and IPv6 embeddings (mapped,
 * compatible, translated, NAT64 both prefixes, 6to4, Teredo) — the classifier,
 * the allow rules, the operator denies and the judge agree.
 *
 * A plain seeded PRNG (mulberry32), so a failure names its seed and repeats.
 */
import type { AddressClass } from "../../broker/egress/address-classes.js";
import { classifyAddress } from "../../broker/egress/address.js";
import { parseIpLiteral } from "../../broker/egress/ip-literal.js";
import { judge, type EgressPolicy } from "../../broker/egress/judge.js";
import { REACH_CLASSES, reachOf } from "../../broker/egress/reach.js";
import { deniesAddress, namesAddress, parseRule } from "../../broker/egress/rules.js";

const SEED = Number(process.env.EGRESS_PROPERTY_SEED ?? 0x7e7e);
const RUNS = 400;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NONE = { hostInterfaces: [] as string[] };
const v4Text = (v: number) => `${v >>> 24}.${(v >>> 16) & 0xff}.${(v >>> 8) & 0xff}.${v & 0xff}`;
const hex = (n: number) => n.toString(16);
const classOf = (ip: string): AddressClass => classifyAddress(ip, NONE).class;

/** Bases inside every special range, so that every class is drawn often. */
const SPECIAL = [
  "0.0.0.0/8",
  "127.0.0.0/8",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "169.254.0.0/16",
  "100.64.0.0/10",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "192.0.2.0/24",
  "198.18.0.0/15",
];
const METADATA = ["169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16"];

function randomV4(rand: () => number): number {
  const pick = rand();
  if (pick < 0.1)
    return METADATA.map((m) => m.split(".").reduce((acc, p) => acc * 256 + Number(p), 0))[
      Math.floor(rand() * METADATA.length)
    ]!;
  if (pick < 0.6) {
    const [base, prefix] = SPECIAL[Math.floor(rand() * SPECIAL.length)]!.split("/");
    const b = base!.split(".").reduce((acc, p) => acc * 256 + Number(p), 0);
    const size = 2 ** (32 - Number(prefix));
    return (b + Math.floor(rand() * size)) >>> 0;
  }
  return Math.floor(rand() * 2 ** 32) >>> 0;
}

/** Every URL-host spelling the WHATWG parser reads as this IPv4. */
function hostSpellings(v: number): string[] {
  const o = [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff] as const;
  return [
    v4Text(v),
    String(v),
    `0x${hex(v)}`,
    o.map((x) => `0${x.toString(8)}`).join("."),
    `${o[0]}.${o[1]}.${(v & 0xffff) >>> 0}`,
    `${o[0]}.${v & 0xffffff}`,
    `0x${hex(o[0])}.${o[1]}.0${o[2].toString(8)}.${o[3]}`,
  ];
}

/** Every IPv6 form carrying this IPv4 (Teredo with a public server, and as a server with a public client). */
function ipv6Forms(v: number, rand: () => number, publicV4: number): Array<{ form: string; text: string }> {
  const hi = v >>> 16;
  const lo = v & 0xffff;
  const r16 = () => hex(Math.floor(rand() * 0x10000));
  const inv = ~v >>> 0;
  const pinv = ~publicV4 >>> 0;
  const forms = [
    { form: "mapped-dotted", text: `::ffff:${v4Text(v)}` },
    { form: "mapped", text: `::ffff:${hex(hi)}:${hex(lo)}` },
    { form: "translated", text: `::ffff:0:${hex(hi)}:${hex(lo)}` },
    { form: "nat64", text: `64:ff9b::${hex(hi)}:${hex(lo)}` },
    { form: "nat64-local", text: `64:ff9b:1:${r16()}:${r16()}:${r16()}:${hex(hi)}:${hex(lo)}` },
    { form: "6to4", text: `2002:${hex(hi)}:${hex(lo)}:${r16()}::${r16()}` },
    {
      form: "teredo-client",
      text: `2001:0:${hex(publicV4 >>> 16)}:${hex(publicV4 & 0xffff)}:8000:${r16()}:${hex(inv >>> 16)}:${hex(inv & 0xffff)}`,
    },
    {
      form: "teredo-server",
      text: `2001:0:${hex(hi)}:${hex(lo)}:8000:${r16()}:${hex(pinv >>> 16)}:${hex(pinv & 0xffff)}`,
    },
  ];
  // `::0.0.0.0` and `::0.0.0.1` are `::` and `::1`, not IPv4-compatible addresses.
  if (v > 1) forms.push({ form: "compatible", text: `::${hex(hi)}:${hex(lo)}` });
  return forms;
}

/** A CIDR of `prefix` containing `v`, and one of the same size that does not. */
function ranges(v: number, prefix: number): { inside: string; outside: string } {
  const size = 2 ** (32 - prefix);
  const base = v - (v % size);
  const flipped = prefix === 0 ? null : (base ^ (2 ** (32 - prefix))) >>> 0; // the neighbouring block
  return { inside: `${v4Text(base)}/${prefix}`, outside: flipped === null ? "" : `${v4Text(flipped)}/${prefix}` };
}

function randomPublic(rand: () => number): number {
  for (;;) {
    const v = Math.floor(rand() * 2 ** 32) >>> 0;
    if (classOf(v4Text(v)) === "public") return v;
  }
}

const everyClass = reachOf([...REACH_CLASSES], [], false);

describe(`every form of an IPv4 agrees with the IPv4 (seed ${SEED}, ${RUNS} addresses)`, () => {
  const rand = mulberry32(SEED);
  const cases = Array.from({ length: RUNS }, () => {
    const v = randomV4(rand);
    return {
      v,
      publicV4: randomPublic(rand),
      prefix: Math.floor(rand() * 33),
      allowPrefix: 16 + Math.floor(rand() * 17),
      seed: Math.floor(rand() * 2 ** 31),
    };
  });

  test("URL host spellings are the same address, of the same class", () => {
    for (const { v } of cases) {
      const canonical = v4Text(v);
      for (const spelling of hostSpellings(v)) {
        const hostname = new URL(`http://${spelling}:8080/`).hostname;
        expect([spelling, parseIpLiteral(hostname)]).toEqual([spelling, canonical]);
        expect([spelling, parseIpLiteral(spelling)]).toEqual([spelling, canonical]);
      }
    }
  });

  test("classes, allow rules and denies agree on every IPv6 form", () => {
    for (const { v, publicV4, prefix, allowPrefix, seed } of cases) {
      const canonical = v4Text(v);
      const cls = classOf(canonical);
      const deny = ranges(v, prefix);
      const denyInside = parseRule(`http://[${deny.inside}]`, { allowBroad: true });
      const denyOutside = deny.outside === "" ? null : parseRule(`http://[${deny.outside}]`, { allowBroad: true });
      const named = parseRule(`http://${canonical}:8080`, { allowBroad: true }); // allowBroad: unspecified is probed too
      const allow = ranges(v, allowPrefix);
      const allowInside = parseRule(`http://[${allow.inside}]:8080`, { allowBroad: true });
      const allowOutside = parseRule(`http://[${allow.outside}]:8080`, { allowBroad: true });
      const formRand = mulberry32(seed);
      for (const { form, text } of [{ form: "ipv4", text: canonical }, ...ipv6Forms(v, formRand, publicV4)]) {
        const address = parseIpLiteral(text.includes(":") ? `[${text}]` : text)!;
        const info = classifyAddress(address, NONE);
        const label = `${canonical} as ${form} ${address}`;
        // The class is the IPv4's (an IPv4-compatible address of a public IPv4 is reserved).
        const expected = cls === "public" && form === "compatible" ? "reserved" : cls;
        expect([label, info.class]).toEqual([label, expected]);
        // A Teredo address is judged by its client unless only the server is non-public:
        // a public server beside a public client is not what the address reaches.
        const decisive = !(form === "teredo-server" && cls === "public");
        if (form !== "ipv4")
          expect([label, info.embedded?.address]).toEqual([label, decisive ? canonical : v4Text(publicV4)]);
        // Rules naming the IPv4 name every form (by the IPv4 it is judged by); denies of a range holding it deny every form.
        expect([label, namesAddress(named, address)]).toEqual([label, decisive]);
        expect([label, namesAddress(allowInside, address)]).toEqual([label, decisive]);
        expect([label, deniesAddress(denyInside, address)]).toEqual([label, true]);
        // And ranges not holding it neither name nor deny it (the Teredo server probe also
        // carries a public client, which a deny may legitimately hold).
        if (decisive) expect([label, namesAddress(allowOutside, address)]).toEqual([label, false]);
        const otherCarried = form === "teredo-client" || form === "teredo-server" ? publicV4 : null;
        if (denyOutside !== null && (otherCarried === null || !deniesAddress(denyOutside, v4Text(otherCarried)))) {
          expect([label, deniesAddress(denyOutside, address)]).toEqual([label, false]);
        }
      }
    }
  });

  test("a rule written in an IPv6 form names the plain IPv4 and every other form", () => {
    for (const { v, publicV4, seed } of cases.slice(0, 100)) {
      const canonical = v4Text(v);
      const forms = ipv6Forms(v, mulberry32(seed), publicV4).filter((f) => !f.form.startsWith("teredo"));
      for (const written of forms) {
        const rule = parseRule(`http://[${written.text}]:8080`, { allowBroad: true });
        for (const other of [{ form: "ipv4", text: canonical }, ...forms]) {
          const address = parseIpLiteral(other.text.includes(":") ? `[${other.text}]` : other.text)!;
          const label = `rule ${written.form} ${written.text} vs ${other.form} ${address}`;
          expect([label, namesAddress(rule, address)]).toEqual([label, true]);
          expect([label, deniesAddress(rule, address)]).toEqual([label, true]);
        }
      }
    }
  });

  test("the judge gives every form the IPv4's verdict", async () => {
    for (const { v, publicV4, prefix, seed } of cases.slice(0, 150)) {
      const canonical = v4Text(v);
      const cls = classOf(canonical);
      const deny = ranges(v, prefix);
      const base: EgressPolicy = {
        extension: "probe",
        approved: [parseRule("http://probe.example:8080"), parseRule(`http://${canonical}:8080`, { allowBroad: true })],
        operatorDeny: [],
        reach: reachOf([...REACH_CLASSES], cls === "metadata" ? [canonical] : [], false),
        offline: false,
        sessionAllow: null,
      };
      for (const { form, text } of [{ form: "ipv4", text: canonical }, ...ipv6Forms(v, mulberry32(seed), publicV4)]) {
        const address = parseIpLiteral(text.includes(":") ? `[${text}]` : text)!;
        const family = address.includes(":") ? 6 : 4;
        const resolve = async () => [{ address, family } as const];
        const label = `${canonical} as ${form}`;
        const allowed = await judge(new URL("http://probe.example:8080/x"), "GET", base, resolve);
        if (cls === "unspecified")
          expect([label, allowed]).toMatchObject([label, { allowed: false, rule: "address:unspecified" }]);
        else {
          const expectedClass = cls === "public" && form === "compatible" ? "reserved" : cls;
          expect([label, allowed]).toMatchObject([
            label,
            { allowed: true, addresses: [{ address, family, class: expectedClass }] },
          ]);
        }
        const denied = await judge(
          new URL("http://probe.example:8080/x"),
          "GET",
          { ...base, operatorDeny: [parseRule(`[${deny.inside}]`, { allowBroad: true })] },
          resolve,
        );
        expect([label, denied]).toMatchObject([label, { allowed: false, rule: `operator:deny [${deny.inside}]` }]);
        // Without the class switched on, a non-public form is refused by the operator's switch, never allowed.
        const closed = await judge(
          new URL("http://probe.example:8080/x"),
          "GET",
          { ...base, reach: reachOf([], [], false) },
          resolve,
        );
        if (cls !== "public" || form === "compatible") expect([label, closed.allowed]).toEqual([label, false]);
      }
    }
  });

  test("the probes drew every IPv4 class the tables hold", () => {
    const seen = new Set(cases.map(({ v }) => classOf(v4Text(v))));
    for (const cls of [
      "public",
      "unspecified",
      "loopback",
      "private",
      "link_local",
      "cgnat",
      "metadata",
      "multicast",
      "reserved",
      "documentation",
      "benchmarking",
    ])
      expect([cls, seen.has(cls as AddressClass)]).toEqual([cls, true]);
  });
});
