/**
 * Egress addresses: classification (every class, every IPv6 embedding),
 * canonical forms, URL IP literals in every encoding WHATWG accepts, CIDRs.
 */
import { networkInterfaces } from "node:os";
import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { ADDRESS_CLASSES, type AddressClass } from "../../broker/egress/address-classes.js";
import { classifyAddress } from "../../broker/egress/address.js";
import { cidrContains, parseCidr } from "../../broker/egress/cidr.js";
import { parseIpLiteral } from "../../broker/egress/ip-literal.js";
import { InvalidAddressError, MAPPED, v6 } from "../../broker/egress/ip-text.js";

const NONE = { hostInterfaces: [] as string[] };
const classOf = (ip: string) => classifyAddress(ip, NONE).class;

function v4Text(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 0xff}.${(value >>> 8) & 0xff}.${value & 0xff}`;
}
function v4Value(text: string): number {
  return text.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}
const hex16 = (n: number) => n.toString(16);

test("the IPv4-mapped block's constant is ::ffff:0:0 (written as a literal to keep isIPv6 out of start-up)", () => {
  expect(MAPPED).toBe(v6("::ffff:0:0"));
});

describe("classifyAddress: IPv4", () => {
  test.each<[string, AddressClass]>([
    // unspecified: all of 0.0.0.0/8
    ["0.0.0.0", "unspecified"],
    ["0.0.0.1", "unspecified"],
    ["0.255.255.255", "unspecified"],
    // loopback
    ["127.0.0.1", "loopback"],
    ["127.0.0.0", "loopback"],
    ["127.255.255.254", "loopback"],
    ["127.1.2.3", "loopback"],
    // private (RFC 1918) and its edges
    ["10.0.0.0", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.0", "private"],
    ["172.31.255.255", "private"],
    ["172.15.255.255", "public"],
    ["172.32.0.0", "public"],
    ["192.168.0.1", "private"],
    ["192.168.255.255", "private"],
    ["192.167.255.255", "public"],
    ["192.169.0.0", "public"],
    // link local
    ["169.254.0.1", "link_local"],
    ["169.254.169.253", "link_local"],
    ["169.254.255.255", "link_local"],
    ["169.253.255.255", "public"],
    ["169.255.0.0", "public"],
    // carrier-grade NAT
    ["100.64.0.0", "cgnat"],
    ["100.127.255.255", "cgnat"],
    ["100.63.255.255", "public"],
    ["100.128.0.0", "public"],
    // multicast
    ["224.0.0.1", "multicast"],
    ["233.252.0.1", "multicast"],
    ["239.255.255.255", "multicast"],
    ["223.255.255.255", "public"],
    // broadcast and reserved
    ["255.255.255.255", "broadcast"],
    ["255.255.255.254", "reserved"],
    ["240.0.0.0", "reserved"],
    ["250.1.2.3", "reserved"],
    ["192.0.0.1", "reserved"],
    ["192.0.0.170", "reserved"],
    ["192.88.99.1", "reserved"],
    // documentation
    ["192.0.2.1", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.255", "documentation"],
    ["203.0.114.0", "public"],
    // benchmarking
    ["198.18.0.0", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.17.255.255", "public"],
    ["198.20.0.0", "public"],
    // cloud metadata wins over the range it sits in
    ["169.254.169.254", "metadata"],
    ["169.254.170.2", "metadata"],
    ["169.254.170.23", "metadata"],
    ["169.254.0.23", "metadata"],
    ["100.100.100.200", "metadata"],
    ["168.63.129.16", "metadata"],
    ["100.100.100.201", "cgnat"],
    // public
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["1.0.0.0", "public"],
    ["126.255.255.255", "public"],
    ["128.0.0.0", "public"],
    ["192.175.48.1", "public"], // AS112: globally reachable
    ["192.52.193.1", "public"], // AMT: globally reachable
  ])("%s is %s", (ip, cls) => {
    const info = classifyAddress(ip, NONE);
    expect(info).toEqual({ address: ip, family: 4, class: cls });
  });
});

describe("classifyAddress: IPv6", () => {
  test.each<[string, AddressClass, string]>([
    ["::", "unspecified", "::"],
    ["0:0:0:0:0:0:0:0", "unspecified", "::"],
    ["::1", "loopback", "::1"],
    ["0:0:0:0:0:0:0:1", "loopback", "::1"],
    ["0000:0000:0000:0000:0000:0000:0000:0001", "loopback", "::1"],
    ["fe80::1", "link_local", "fe80::1"],
    ["FE80::1", "link_local", "fe80::1"],
    ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link_local", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    ["fec0::1", "private", "fec0::1"],
    ["feff::1", "private", "feff::1"],
    ["fc00::1", "private", "fc00::1"],
    ["fd12:3456:789a::1", "private", "fd12:3456:789a::1"],
    ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    ["fd00:ec2::254", "metadata", "fd00:ec2::254"],
    ["fd00:ec2:0:0:0:0:0:254", "metadata", "fd00:ec2::254"],
    ["fd00:ec2::23", "metadata", "fd00:ec2::23"],
    ["fd20:ce::254", "metadata", "fd20:ce::254"],
    ["fd00:ec2::253", "private", "fd00:ec2::253"],
    ["ff02::1", "multicast", "ff02::1"],
    ["ff05::1:3", "multicast", "ff05::1:3"],
    ["ff0e::101", "multicast", "ff0e::101"],
    ["2001:db8::1", "documentation", "2001:db8::1"],
    ["2001:DB8:85A3::8A2E:370:7334", "documentation", "2001:db8:85a3::8a2e:370:7334"],
    ["3fff::1", "documentation", "3fff::1"],
    ["3fff:fff:ffff::1", "documentation", "3fff:fff:ffff::1"],
    ["2001:2::1", "benchmarking", "2001:2::1"],
    ["2001:2:0:ffff::1", "benchmarking", "2001:2:0:ffff::1"],
    ["2001:1::1", "public", "2001:1::1"],
    ["2001:1::4", "reserved", "2001:1::4"],
    ["2001:3::1", "public", "2001:3::1"],
    ["2001:4:112::1", "public", "2001:4:112::1"],
    ["2001:10::1", "reserved", "2001:10::1"],
    ["2001:20::1", "reserved", "2001:20::1"],
    ["2001:1ff::1", "reserved", "2001:1ff::1"],
    ["2001:200::1", "public", "2001:200::1"],
    ["100::1", "reserved", "100::1"],
    ["5f00::1", "reserved", "5f00::1"],
    ["4000::1", "reserved", "4000::1"],
    ["1::", "reserved", "1::"],
    ["::1:0:0:0", "reserved", "::1:0:0:0"],
    ["0:0:0:1:0:0:0:0", "reserved", "0:0:0:1::"],
    ["2606:4700::1111", "public", "2606:4700::1111"],
    ["2606:4700:4700::1001", "public", "2606:4700:4700::1001"],
    ["2a00:1450:4001:80b::200e", "public", "2a00:1450:4001:80b::200e"],
    ["2620:4f:8000::1", "public", "2620:4f:8000::1"],
    ["3ffe::1", "public", "3ffe::1"],
  ])("%s is %s (%s)", (ip, cls, canonical) => {
    const info = classifyAddress(ip, NONE);
    expect(info.class).toBe(cls);
    expect(info.family).toBe(6);
    expect(info.address).toBe(canonical);
    expect(info.embedded).toBeUndefined();
  });

  test.each<[string, string, string]>([
    ["fe80::1%eth0", "fe80::1%eth0", "eth0"],
    ["fe80::1%br-1234", "fe80::1%br-1234", "br-1234"],
    ["FE80:0:0:0:0:0:0:1%2", "fe80::1%2", "2"],
    ["fe80::1%enp0s31f6", "fe80::1%enp0s31f6", "enp0s31f6"],
  ])("zone id %s is kept in the canonical form", (ip, canonical, zone) => {
    expect(classifyAddress(ip, NONE)).toEqual({ address: canonical, family: 6, class: "link_local", zone });
  });

  test("a zone id does not change the class of a non-link-local address", () => {
    expect(classifyAddress("::1%lo", NONE)).toMatchObject({ class: "loopback", zone: "lo" });
    expect(classifyAddress("::ffff:127.0.0.1%eth0", NONE)).toMatchObject({ class: "loopback", zone: "eth0" });
  });
});

describe("classifyAddress: IPv6 embedding an IPv4", () => {
  test.each<[string, AddressClass, string, string, string]>([
    // IPv4-mapped ::ffff:0:0/96, every spelling
    ["::ffff:127.0.0.1", "loopback", "::ffff:7f00:1", "127.0.0.1", "ipv4_mapped"],
    ["::ffff:7f00:1", "loopback", "::ffff:7f00:1", "127.0.0.1", "ipv4_mapped"],
    ["::FFFF:7F00:0001", "loopback", "::ffff:7f00:1", "127.0.0.1", "ipv4_mapped"],
    ["0:0:0:0:0:ffff:127.0.0.1", "loopback", "::ffff:7f00:1", "127.0.0.1", "ipv4_mapped"],
    ["0::ffff:127.0.0.1", "loopback", "::ffff:7f00:1", "127.0.0.1", "ipv4_mapped"],
    ["::ffff:10.1.2.3", "private", "::ffff:a01:203", "10.1.2.3", "ipv4_mapped"],
    ["::ffff:169.254.169.254", "metadata", "::ffff:a9fe:a9fe", "169.254.169.254", "ipv4_mapped"],
    ["::ffff:a9fe:a9fe", "metadata", "::ffff:a9fe:a9fe", "169.254.169.254", "ipv4_mapped"],
    ["::ffff:100.100.100.200", "metadata", "::ffff:6464:64c8", "100.100.100.200", "ipv4_mapped"],
    ["::ffff:0.0.0.0", "unspecified", "::ffff:0:0", "0.0.0.0", "ipv4_mapped"],
    ["::ffff:255.255.255.255", "broadcast", "::ffff:ffff:ffff", "255.255.255.255", "ipv4_mapped"],
    ["::ffff:100.64.0.1", "cgnat", "::ffff:6440:1", "100.64.0.1", "ipv4_mapped"],
    ["::ffff:224.0.0.251", "multicast", "::ffff:e000:fb", "224.0.0.251", "ipv4_mapped"],
    ["::ffff:198.18.0.1", "benchmarking", "::ffff:c612:1", "198.18.0.1", "ipv4_mapped"],
    ["::ffff:192.0.2.1", "documentation", "::ffff:c000:201", "192.0.2.1", "ipv4_mapped"],
    ["::ffff:240.0.0.1", "reserved", "::ffff:f000:1", "240.0.0.1", "ipv4_mapped"],
    ["::ffff:8.8.8.8", "public", "::ffff:808:808", "8.8.8.8", "ipv4_mapped"],
    // IPv4-compatible ::/96 (deprecated): a public IPv4 leaves it reserved
    ["::127.0.0.1", "loopback", "::7f00:1", "127.0.0.1", "ipv4_compatible"],
    ["::7f00:1", "loopback", "::7f00:1", "127.0.0.1", "ipv4_compatible"],
    ["::192.168.1.1", "private", "::c0a8:101", "192.168.1.1", "ipv4_compatible"],
    ["::169.254.169.254", "metadata", "::a9fe:a9fe", "169.254.169.254", "ipv4_compatible"],
    ["::2", "unspecified", "::2", "0.0.0.2", "ipv4_compatible"],
    ["::8.8.8.8", "reserved", "::808:808", "8.8.8.8", "ipv4_compatible"],
    // IPv4-translated ::ffff:0:0:0/96 (RFC 6145)
    ["::ffff:0:7f00:1", "loopback", "::ffff:0:7f00:1", "127.0.0.1", "ipv4_translated"],
    ["::ffff:0:10.0.0.1", "private", "::ffff:0:a00:1", "10.0.0.1", "ipv4_translated"],
    ["::ffff:0:808:808", "public", "::ffff:0:808:808", "8.8.8.8", "ipv4_translated"],
    // NAT64 well-known prefix and local-use prefix
    ["64:ff9b::7f00:1", "loopback", "64:ff9b::7f00:1", "127.0.0.1", "nat64"],
    ["64:ff9b::127.0.0.1", "loopback", "64:ff9b::7f00:1", "127.0.0.1", "nat64"],
    ["64:ff9b::10.0.0.1", "private", "64:ff9b::a00:1", "10.0.0.1", "nat64"],
    ["64:ff9b::a9fe:a9fe", "metadata", "64:ff9b::a9fe:a9fe", "169.254.169.254", "nat64"],
    ["64:ff9b::8.8.8.8", "public", "64:ff9b::808:808", "8.8.8.8", "nat64"],
    ["64:ff9b:1::7f00:1", "loopback", "64:ff9b:1::7f00:1", "127.0.0.1", "nat64"],
    ["64:ff9b:1:abcd::10.0.0.1", "private", "64:ff9b:1:abcd::a00:1", "10.0.0.1", "nat64"],
    ["64:ff9b:1::8.8.8.8", "public", "64:ff9b:1::808:808", "8.8.8.8", "nat64"],
    // 6to4: IPv4 in bits 16-47
    ["2002:7f00:1::", "loopback", "2002:7f00:1::", "127.0.0.1", "6to4"],
    ["2002:7f00:0001:0:0:0:0:1", "loopback", "2002:7f00:1::1", "127.0.0.1", "6to4"],
    ["2002:a9fe:a9fe::1", "metadata", "2002:a9fe:a9fe::1", "169.254.169.254", "6to4"],
    ["2002:c0a8:101::1", "private", "2002:c0a8:101::1", "192.168.1.1", "6to4"],
    ["2002::", "unspecified", "2002::", "0.0.0.0", "6to4"],
    ["2002:808:808::1", "public", "2002:808:808::1", "8.8.8.8", "6to4"],
    // Teredo: client is the inverted last 32 bits; a non-public server counts too
    [
      "2001:0:4136:e378:8000:63bf:80ff:fffe",
      "loopback",
      "2001:0:4136:e378:8000:63bf:80ff:fffe",
      "127.0.0.1",
      "teredo_client",
    ],
    ["2001::5601:5601", "metadata", "2001::5601:5601", "169.254.169.254", "teredo_client"],
    [
      "2001:0:4136:e378:8000:63bf:f5ff:fffe",
      "private",
      "2001:0:4136:e378:8000:63bf:f5ff:fffe",
      "10.0.0.1",
      "teredo_client",
    ],
    ["2001:0:a00:1:8000:63bf:f7f7:f7f7", "private", "2001:0:a00:1:8000:63bf:f7f7:f7f7", "10.0.0.1", "teredo_server"],
    [
      "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
      "public",
      "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
      "8.8.8.8",
      "teredo_client",
    ],
  ])("%s is %s", (ip, cls, canonical, embedded, via) => {
    const info = classifyAddress(ip, NONE);
    expect(info).toEqual({ address: canonical, family: 6, class: cls, embedded: { address: embedded, via } });
  });

  test("an address just outside an embedding prefix is not unwrapped", () => {
    // 64:ff9b:0:1::/64 is neither 64:ff9b::/96 nor 64:ff9b:1::/48: outside 2000::/3, so reserved.
    expect(classifyAddress("64:ff9b:0:1::7f00:1", NONE)).toEqual({
      address: "64:ff9b:0:1::7f00:1",
      family: 6,
      class: "reserved",
    });
    // ::fffe:0:0/96 is not IPv4-mapped.
    expect(classifyAddress("::fffe:7f00:1", NONE)).toEqual({ address: "::fffe:7f00:1", family: 6, class: "reserved" });
    // 2001:1::/32 is not Teredo (2001::/32).
    expect(classifyAddress("2001:1:0:0:8000:63bf:80ff:fffe", NONE).embedded).toBeUndefined();
    // 2003::/16 is not 6to4.
    expect(classifyAddress("2003:7f00:1::", NONE)).toEqual({ address: "2003:7f00:1::", family: 6, class: "public" });
  });
});

describe("classifyAddress: host interfaces", () => {
  const ifaces = { hostInterfaces: ["8.8.4.4", "2606:4700::6810:84e5", "127.0.0.1", "10.0.0.5", "fe80::1"] };

  test.each<[string, AddressClass]>([
    ["8.8.4.4", "host_interface"],
    ["::ffff:8.8.4.4", "host_interface"],
    ["64:ff9b::8.8.4.4", "host_interface"],
    ["2002:808:404::1", "host_interface"],
    ["2606:4700::6810:84e5", "host_interface"],
    ["2606:4700:0:0:0:0:6810:84E5", "host_interface"],
    ["8.8.8.8", "public"],
    ["2606:4700::6810:84e6", "public"],
    // a host interface that is not public keeps its own class
    ["127.0.0.1", "loopback"],
    ["10.0.0.5", "private"],
    ["fe80::1%eth0", "link_local"],
  ])("%s is %s", (ip, cls) => {
    expect(classifyAddress(ip, ifaces).class).toBe(cls);
  });

  test("an IPv4-mapped host interface matches the IPv4 form", () => {
    expect(classifyAddress("8.8.4.4", { hostInterfaces: ["::ffff:8.8.4.4"] }).class).toBe("host_interface");
  });

  test("a malformed host interface is refused, not skipped", () => {
    expect(() => classifyAddress("8.8.8.8", { hostInterfaces: ["8.8.4"] })).toThrow(InvalidAddressError);
  });

  test("by default every address of this host's interfaces is non-public", () => {
    const own = Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((e) => e.address));
    expect(own.length).toBeGreaterThan(0);
    for (const address of own) expect(classifyAddress(address).class).not.toBe("public");
  });
});

describe("classifyAddress: refused input", () => {
  test.each([
    "",
    " 127.0.0.1",
    "127.0.0.1 ",
    "localhost",
    "example.com",
    "127.1",
    "127.0.1",
    "0177.0.0.1",
    "127.0.0.01",
    "0x7f.0.0.1",
    "0x7f000001",
    "2130706433",
    "256.0.0.1",
    "1.2.3.4.5",
    "1.2.3.",
    "127.0.0.1%eth0",
    "[::1]",
    "::ffff:0177.0.0.1",
    "::ffff:127.1",
    "::ffff:0x7f.0.0.1",
    "::ffff:127.0.0.01",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7",
    "1::2::3",
    ":::",
    "12345::",
    "gggg::",
    "::1.2.3.4:5",
    "fe80::1%",
    "fe80::1%eth 0",
    "fe80::1%eth0%1",
    "fe80::1%eth/0",
    "1:2:3:4:5:6:7:8::",
  ])("%j throws InvalidAddressError", (ip) => {
    expect(() => classifyAddress(ip, NONE)).toThrow(InvalidAddressError);
  });
});

describe("WHATWG URL hosts: parseIpLiteral then classifyAddress", () => {
  // Every legacy IPv4 spelling, as the URL parser normalises it.
  test.each<[string, string, AddressClass]>([
    ["http://127.0.0.1/", "127.0.0.1", "loopback"],
    ["http://2130706433/", "127.0.0.1", "loopback"],
    ["http://0x7f000001/", "127.0.0.1", "loopback"],
    ["http://0X7F000001/", "127.0.0.1", "loopback"],
    ["http://0x7f.0.0.1/", "127.0.0.1", "loopback"],
    ["http://0x7f.1/", "127.0.0.1", "loopback"],
    ["http://0x7f.0x0.0x0.0x1/", "127.0.0.1", "loopback"],
    ["http://0177.0.0.1/", "127.0.0.1", "loopback"],
    ["http://0177.0.0.01/", "127.0.0.1", "loopback"],
    ["http://000000177.0.0.1/", "127.0.0.1", "loopback"],
    ["http://017700000001/", "127.0.0.1", "loopback"],
    ["http://0177.1/", "127.0.0.1", "loopback"],
    ["http://127.1/", "127.0.0.1", "loopback"],
    ["http://127.0.1/", "127.0.0.1", "loopback"],
    ["http://0x7f.000.0x00.01/", "127.0.0.1", "loopback"], // mixed radixes
    ["http://127.0x0.01/", "127.0.0.1", "loopback"],
    ["http://127.0.0.1./", "127.0.0.1", "loopback"],
    ["http://0x7f.0.0.1./", "127.0.0.1", "loopback"],
    ["http://%31%32%37.0.0.1/", "127.0.0.1", "loopback"],
    ["http://%30%78%37%66.1/", "127.0.0.1", "loopback"],
    ["http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "127.0.0.1", "loopback"], // full-width digits
    ["http://127\u30020\u30020\u30021/", "127.0.0.1", "loopback"], // ideographic full stops
    ["http://127\uff0e0\uff0e0\uff0e1/", "127.0.0.1", "loopback"], // full-width full stops
    ["http://127.255.255.254/", "127.255.255.254", "loopback"],
    ["http://evil.example@127.0.0.1/", "127.0.0.1", "loopback"], // userinfo: the host is what counts
    ["http://127.0.0.1\\@evil.example/", "127.0.0.1", "loopback"], // '\' is '/' in http URLs
    ["http://0/", "0.0.0.0", "unspecified"],
    ["http://0x/", "0.0.0.0", "unspecified"],
    ["http://0.0.0.0/", "0.0.0.0", "unspecified"],
    ["http://00/", "0.0.0.0", "unspecified"],
    ["http://0x.0x.0x.0x/", "0.0.0.0", "unspecified"],
    ["http://169.254.169.254/", "169.254.169.254", "metadata"],
    ["http://2852039166/", "169.254.169.254", "metadata"],
    ["http://0xa9fea9fe/", "169.254.169.254", "metadata"],
    ["http://0xA9.0xFE.0xA9.0xFE/", "169.254.169.254", "metadata"],
    ["http://0251.0376.0251.0376/", "169.254.169.254", "metadata"],
    ["http://169.254.43518/", "169.254.169.254", "metadata"],
    ["http://169.16689662/", "169.254.169.254", "metadata"],
    ["http://0xa9.0xfea9fe/", "169.254.169.254", "metadata"],
    ["http://100.100.100.200/", "100.100.100.200", "metadata"],
    ["http://1684301000/", "100.100.100.200", "metadata"],
    ["http://169.254.170.2/", "169.254.170.2", "metadata"],
    ["http://10.1/", "10.0.0.1", "private"],
    ["http://012.1/", "10.0.0.1", "private"],
    ["http://167772161/", "10.0.0.1", "private"],
    ["http://0xc0a80001/", "192.168.0.1", "private"],
    ["http://3232235521/", "192.168.0.1", "private"],
    ["http://0300.0250.0.1/", "192.168.0.1", "private"],
    ["http://172.16.1/", "172.16.0.1", "private"],
    ["http://100.64.1/", "100.64.0.1", "cgnat"],
    ["http://4294967295/", "255.255.255.255", "broadcast"],
    ["http://0xffffffff/", "255.255.255.255", "broadcast"],
    ["http://0xe0000001/", "224.0.0.1", "multicast"],
    ["http://198.18.1/", "198.18.0.1", "benchmarking"],
    ["http://8.8.8.8/", "8.8.8.8", "public"],
    ["http://134744072/", "8.8.8.8", "public"],
    ["http://0x08080808/", "8.8.8.8", "public"],
    ["http://010.010.010.010/", "8.8.8.8", "public"],
  ])("%s → %s (%s)", (url, canonical, cls) => {
    const hostname = new URL(url).hostname;
    expect(hostname).toBe(canonical); // WHATWG already normalised it
    expect(parseIpLiteral(hostname)).toBe(canonical);
    expect(classifyAddress(parseIpLiteral(hostname)!, NONE)).toEqual({ address: canonical, family: 4, class: cls });
  });

  test.each<[string, string, AddressClass]>([
    ["http://[::1]/", "::1", "loopback"],
    ["http://[0:0:0:0:0:0:0:1]/", "::1", "loopback"],
    ["http://[0000:0000:0000:0000:0000:0000:0000:0001]/", "::1", "loopback"],
    ["http://[::]/", "::", "unspecified"],
    ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1", "loopback"],
    ["http://[::ffff:7f00:1]/", "::ffff:7f00:1", "loopback"],
    ["http://[::FFFF:7F00:1]/", "::ffff:7f00:1", "loopback"],
    ["http://[0:0:0:0:0:ffff:127.0.0.1]/", "::ffff:7f00:1", "loopback"],
    ["http://[::127.0.0.1]/", "::7f00:1", "loopback"],
    ["http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1", "loopback"],
    ["http://[64:ff9b::127.0.0.1]/", "64:ff9b::7f00:1", "loopback"],
    ["http://[64:ff9b:1::a00:1]/", "64:ff9b:1::a00:1", "private"],
    ["http://[2002:7f00:1::]/", "2002:7f00:1::", "loopback"],
    ["http://[2002:a9fe:a9fe::]/", "2002:a9fe:a9fe::", "metadata"],
    ["http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"],
    ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe", "metadata"],
    ["http://[fd00:ec2::254]/", "fd00:ec2::254", "metadata"],
    ["http://[fe80::1]/", "fe80::1", "link_local"],
    ["http://[fc00::1]/", "fc00::1", "private"],
    ["http://[fec0::1]/", "fec0::1", "private"],
    ["http://[ff02::1]/", "ff02::1", "multicast"],
    ["http://[2001:db8::1]/", "2001:db8::1", "documentation"],
    ["http://[2606:4700::1111]/", "2606:4700::1111", "public"],
    ["http://[2606:4700:0:0:0:0:0:1111]/", "2606:4700::1111", "public"],
    ["http://[1:0:0:2:0:0:0:3]/", "1:0:0:2::3", "reserved"],
  ])("%s → %s (%s)", (url, canonical, cls) => {
    const hostname = new URL(url).hostname;
    expect(hostname).toBe(`[${canonical}]`);
    expect(parseIpLiteral(hostname)).toBe(canonical);
    const info = classifyAddress(parseIpLiteral(hostname)!, NONE);
    expect(info.address).toBe(canonical);
    expect(info.class).toBe(cls);
  });

  test.each([
    "http://[fe80::1%25eth0]/", // zone ids: refused by the URL parser
    "http://[fe80::1%eth0]/",
    "http://[::ffff:0177.0.0.1]/", // the IPv4 tail of IPv6 is strict decimal
    "http://[::ffff:127.1]/",
    "http://[::ffff:0x7f.0.0.1]/",
    "http://1.2.3.4.5/",
    "http://127.0.0.1.1/",
    "http://256.0.0.1/",
    "http://1.0x1000000/",
    "http://0x100000000/",
    "http://4294967296/",
    "http://08.0.0.1/",
    "http://0.0.0.08/",
    "http://1..2/",
    "http://foo.123/",
    "http://foo.0x7f/",
  ])("the URL parser refuses %s", (url) => {
    expect(() => new URL(url)).toThrow();
  });

  test("a WHATWG URL never serialises an IPv6 with a dotted tail or an uncompressed single zero group", () => {
    expect(new URL("http://[::ffff:1.2.3.4]/").hostname).toBe("[::ffff:102:304]");
    expect(new URL("http://[1:2:3:4:5:6:7::]/").hostname).toBe("[1:2:3:4:5:6:7:0]");
    expect(new URL("http://[::0.0.0.0]/").hostname).toBe("[::]");
  });
});

describe("parseIpLiteral", () => {
  test.each<[string, string]>([
    // raw hosts are read as the URL parser reads them
    ["0x7f.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.1", "127.0.0.1"],
    ["0X7F000001", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["00000000000000000000127.0.0.1", "87.0.0.1"], // octal: 0127
    ["0x", "0.0.0.0"],
    ["0", "0.0.0.0"],
    ["1.256", "1.0.1.0"],
    ["\uff11\uff12\uff17.\uff11", "127.0.0.1"],
    ["127\u30020\u30020\u30021", "127.0.0.1"],
    // IPv6, bracketed or not
    ["[::1]", "::1"],
    ["::1", "::1"],
    ["[::ffff:127.0.0.1]", "::ffff:7f00:1"],
    ["::FFFF:127.0.0.1", "::ffff:7f00:1"],
    ["[2001:DB8:0:0:0:0:0:1]", "2001:db8::1"],
  ])("%j → %s", (host, ip) => {
    expect(parseIpLiteral(host)).toBe(ip);
  });

  test.each([
    "example.com",
    "EXAMPLE.com",
    "localhost",
    "1e1",
    "123.example",
    "foo.0x1g",
    "a_b.example.com",
    "xn--bcher-kva.example",
    "bücher.example",
    "",
    "*",
    "*.example.com",
    "a/b",
    "a?b",
    "0x7f.example",
  ])("%j is not an IP literal (null)", (host) => {
    expect(parseIpLiteral(host)).toBeNull();
  });

  test.each([
    "1.2.3.4.5",
    "256.0.0.1",
    "1.0x1000000",
    "0x100000000",
    "4294967296",
    "08.0.0.1",
    "1..2",
    "foo.123",
    "example.0x7f",
    "\uff11.\uff12.\uff13.\uff14.\uff15",
    "[::1",
    "::1]",
    "[]",
    "[127.0.0.1]",
    "[fe80::1%25eth0]",
    "[fe80::1%eth0]",
    "fe80::1%eth0",
    "[::ffff:0177.0.0.1]",
    "[::ffff:127.1]",
    "[1:2:3:4:5:6:7:8:9]",
    "1::2::3",
  ])("%j is a malformed IP literal (throws)", (host) => {
    expect(() => parseIpLiteral(host)).toThrow(InvalidAddressError);
  });
});

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

/** Non-public IPv4 ranges (and the metadata addresses) to draw from. */
const NON_PUBLIC: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8],
  ["127.0.0.0", 8],
  ["10.0.0.0", 8],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["169.254.0.0", 16],
  ["100.64.0.0", 10],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
  ["198.18.0.0", 15],
  ["192.0.2.0", 24],
  ["192.0.0.0", 24],
  ["169.254.169.254", 32],
  ["100.100.100.200", 32],
  ["168.63.129.16", 32],
];

const nonPublicV4 = fc
  .constantFrom(...NON_PUBLIC)
  .chain(([base, prefix]) =>
    fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 }).map((host) => (v4Value(base) + host) >>> 0),
  );

const anyV4 = fc.integer({ min: 0, max: 0xffffffff });

type Radix = "dec" | "hex" | "HEX" | "oct";
const radix = fc.constantFrom<Radix>("dec", "hex", "HEX", "oct");

function encodeNumber(n: number, r: Radix, zeros: number): string {
  switch (r) {
    case "dec":
      return n.toString(10);
    case "hex":
      return `0x${"0".repeat(zeros)}${n.toString(16)}`;
    case "HEX":
      return `0X${"0".repeat(zeros)}${n.toString(16).toUpperCase()}`;
    case "oct":
      return `0${"0".repeat(zeros)}${n.toString(8)}`;
  }
}

/** Any WHATWG IPv4 spelling of `value`: 1–4 parts, each in any radix, optional trailing dot. */
function legacyIPv4(value: number) {
  return fc
    .record({
      parts: fc.integer({ min: 1, max: 4 }),
      radixes: fc.array(radix, { minLength: 4, maxLength: 4 }),
      zeros: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 4, maxLength: 4 }),
      dot: fc.boolean(),
    })
    .map(({ parts, radixes, zeros, dot }) => {
      const bytes = [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
      const numbers = bytes.slice(0, parts - 1);
      const rest = bytes.slice(parts - 1).reduce((acc, b) => acc * 256 + b, 0);
      numbers.push(rest);
      const text = numbers.map((n, i) => encodeNumber(n, radixes[i]!, zeros[i]!)).join(".");
      return dot ? `${text}.` : text;
    });
}

const FULLWIDTH = (text: string) => text.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)));
const percentEncode = (text: string) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");

/** IPv6 spellings that carry `value` as an embedded IPv4. */
function embeddings(value: number): string[] {
  const hi = value >>> 16;
  const lo = value & 0xffff;
  const dotted = v4Text(value);
  const inv = ~value >>> 0;
  return [
    `[::ffff:${dotted}]`,
    `[::ffff:${hex16(hi)}:${hex16(lo)}]`,
    `[0:0:0:0:0:FFFF:${hex16(hi).toUpperCase()}:${hex16(lo)}]`,
    `[::${dotted}]`,
    `[::ffff:0:${dotted}]`,
    `[64:ff9b::${dotted}]`,
    `[64:ff9b::${hex16(hi)}:${hex16(lo)}]`,
    `[64:ff9b:1::${hex16(hi)}:${hex16(lo)}]`,
    `[2002:${hex16(hi)}:${hex16(lo)}::1]`,
    `[2001:0:4136:e378:8000:63bf:${hex16(inv >>> 16)}:${hex16(inv & 0xffff)}]`,
  ];
}

describe("properties", () => {
  test("every WHATWG-accepted encoding of a non-public IPv4 classifies as non-public (and as its canonical form)", () => {
    fc.assert(
      fc.property(
        nonPublicV4.chain((value) =>
          fc.tuple(
            fc.constant(value),
            legacyIPv4(value),
            fc.constantFrom("plain", "fullwidth", "ideographic", "percent"),
          ),
        ),
        ([value, spelling, dressing]) => {
          const canonical = v4Text(value);
          const expected = classOf(canonical);
          expect(expected).not.toBe("public");
          const dressed =
            dressing === "fullwidth"
              ? FULLWIDTH(spelling)
              : dressing === "ideographic"
                ? spelling.replace(/\./g, "\u3002")
                : dressing === "percent"
                  ? percentEncode(spelling)
                  : spelling;
          const hostname = new URL(`http://${dressed}/`).hostname; // always accepted
          expect(hostname).toBe(canonical);
          const ip = parseIpLiteral(hostname);
          expect(ip).toBe(canonical);
          expect(classifyAddress(ip!, NONE).class).toBe(expected);
          // The raw spelling (not through URL) reads the same.
          if (dressing !== "percent") expect(parseIpLiteral(dressed)).toBe(canonical);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("every IPv6 embedding of a non-public IPv4 classifies as non-public", () => {
    fc.assert(
      fc.property(nonPublicV4, (value) => {
        const expected = classOf(v4Text(value));
        for (const literal of embeddings(value)) {
          const hostname = new URL(`http://${literal}/`).hostname;
          const ip = parseIpLiteral(hostname);
          expect(ip).not.toBeNull();
          const info = classifyAddress(ip!, NONE);
          expect(info.class).not.toBe("public");
          // `::0.0.0.0` and `::0.0.0.1` are `::` and `::1`, not IPv4-compatible addresses.
          if (ip === "::" || ip === "::1") continue;
          expect(info.class).toBe(expected);
          expect(info.embedded?.address).toBe(v4Text(value));
        }
      }),
      { numRuns: 100 },
    );
  });

  test("an embedded public IPv4 is public unless the embedding is IPv4-compatible", () => {
    fc.assert(
      fc.property(
        anyV4.filter((v) => classOf(v4Text(v)) === "public"),
        (value) => {
          for (const literal of embeddings(value)) {
            const info = classifyAddress(parseIpLiteral(literal)!, NONE);
            expect(info.class).toBe(info.embedded?.via === "ipv4_compatible" ? "reserved" : "public");
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  test("parseIpLiteral agrees with the WHATWG URL parser on IPv4-ish hosts", () => {
    const host = fc.string({ unit: fc.constantFrom(..."0123456789abcdefxX."), minLength: 1, maxLength: 14 });
    fc.assert(
      fc.property(host, (raw) => {
        let hostname: string | null = null;
        try {
          hostname = new URL(`http://${raw}/`).hostname;
        } catch {
          hostname = null;
        }
        if (hostname === null) {
          expect(() => parseIpLiteral(raw)).toThrow(InvalidAddressError);
          return;
        }
        const isIp = /^\d+\.\d+\.\d+\.\d+$/.test(hostname);
        expect(parseIpLiteral(raw)).toBe(isIp ? hostname : null);
      }),
      { numRuns: 1500 },
    );
  });

  test("the canonical IPv6 form is the WHATWG serialisation", () => {
    const group = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(
        fc.array(group, { minLength: 8, maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
        fc.boolean(),
        (groups, pads, upper) => {
          let text = groups
            .map((g, i) => g.toString(16).padStart(Math.min(4, g.toString(16).length + pads[i]!), "0"))
            .join(":");
          if (upper) text = text.toUpperCase();
          const whatwg = new URL(`http://[${text}]/`).hostname.slice(1, -1);
          const info = classifyAddress(text, NONE);
          expect(info.address).toBe(whatwg);
          expect(parseIpLiteral(`[${text}]`)).toBe(whatwg);
          expect(classifyAddress(info.address, NONE)).toEqual(info); // idempotent
        },
      ),
      { numRuns: 500 },
    );
  });

  test("IPv4 classification never calls a range public that ipaddr.js calls special", () => {
    const special = new Set([
      "unspecified",
      "broadcast",
      "multicast",
      "linkLocal",
      "loopback",
      "carrierGradeNat",
      "private",
      "reserved",
    ]);
    fc.assert(
      fc.property(fc.oneof(anyV4, nonPublicV4), (value) => {
        const text = v4Text(value);
        const theirs = ipaddr.IPv4.parse(text).range();
        const ours = classOf(text);
        if (special.has(theirs)) expect(ours).not.toBe("public");
        if (ours === "public") expect(["unicast", "as112", "amt"]).toContain(theirs);
      }),
      { numRuns: 2000 },
    );
  });

  test("IPv6 classification never calls a range public that ipaddr.js calls special", () => {
    const special = new Set([
      "unspecified",
      "linkLocal",
      "multicast",
      "loopback",
      "uniqueLocal",
      "deprecatedSiteLocal",
      "benchmarking",
      "discard",
      "orchid2",
      "deprecatedOrchid",
    ]);
    const prefixes = ["fe80", "fc00", "fd00", "fec0", "ff02", "2001:2", "100", "2001:20", "2001:db8", "0"];
    const v6 = fc
      .tuple(
        fc.constantFrom(...prefixes),
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 6, maxLength: 6 }),
      )
      .map(([prefix, rest]) => {
        const head = prefix.split(":");
        const groups = [...head, ...rest.map(hex16)].slice(0, 8);
        while (groups.length < 8) groups.push("0");
        return groups.join(":");
      });
    fc.assert(
      fc.property(v6, (text) => {
        const theirs = ipaddr.IPv6.parse(text).range();
        if (special.has(theirs)) expect(classOf(text)).not.toBe("public");
      }),
      { numRuns: 1000 },
    );
  });
});

// ---------------------------------------------------------------------------
// CIDRs
// ---------------------------------------------------------------------------

describe("parseCidr", () => {
  test.each<[string, { address: string; prefix: number; family: 4 | 6 }]>([
    ["10.0.0.0/8", { address: "10.0.0.0", prefix: 8, family: 4 }],
    ["0.0.0.0/0", { address: "0.0.0.0", prefix: 0, family: 4 }],
    ["192.168.1.7/32", { address: "192.168.1.7", prefix: 32, family: 4 }],
    ["192.168.1.7", { address: "192.168.1.7", prefix: 32, family: 4 }],
    ["172.16.0.0/12", { address: "172.16.0.0", prefix: 12, family: 4 }],
    ["::/0", { address: "::", prefix: 0, family: 6 }],
    ["fd00::/8", { address: "fd00::", prefix: 8, family: 6 }],
    ["FD00:0:0:0::/64", { address: "fd00::", prefix: 64, family: 6 }],
    ["2001:db8::1", { address: "2001:db8::1", prefix: 128, family: 6 }],
    ["::ffff:10.0.0.0/104", { address: "::ffff:a00:0", prefix: 104, family: 6 }],
  ])("%s", (text, expected) => {
    expect(parseCidr(text)).toEqual(expected);
  });

  test.each([
    "",
    "/8",
    "10.0.0.0/",
    "10.0.0.0/33",
    "10.0.0.0/08",
    "10.0.0.0/-1",
    "10.0.0.0/ 8",
    "10.0.0.0/8/8",
    "10.0.0.1/8", // host bits set
    "10.1/16",
    "010.0.0.0/8",
    "0x0a.0.0.0/8",
    "fd00::/129",
    "fd00::1/8",
    "fe80::%eth0/64",
    "[fd00::]/8",
    "example.com/24",
  ])("%j is refused (null)", (text) => {
    expect(parseCidr(text)).toBeNull();
  });
});

describe("cidrContains", () => {
  test.each<[string, string, boolean]>([
    ["10.0.0.0/8", "10.1.2.3", true],
    ["10.0.0.0/8", "11.0.0.0", false],
    ["10.0.0.0/8", "9.255.255.255", false],
    ["10.0.0.0/8", "::ffff:10.1.2.3", true],
    ["10.0.0.0/8", "::ffff:a01:203", true],
    ["10.0.0.0/8", "::10.1.2.3", false], // IPv4-compatible is a different address
    ["10.0.0.0/8", "64:ff9b::10.1.2.3", false], // so is NAT64
    ["::ffff:10.0.0.0/104", "10.1.2.3", true],
    ["::ffff:0:0/96", "8.8.8.8", true],
    ["::/0", "8.8.8.8", true],
    ["0.0.0.0/0", "8.8.8.8", true],
    ["0.0.0.0/0", "::ffff:8.8.8.8", true],
    ["0.0.0.0/0", "2606:4700::1111", false],
    ["192.168.1.7", "192.168.1.7", true],
    ["192.168.1.7/32", "192.168.1.8", false],
    ["127.0.0.1/32", "::ffff:127.0.0.1", true],
    ["fd00::/8", "fd12::1", true],
    ["fd00::/8", "fc00::1", false],
    ["fe80::/10", "fe80::1%eth0", true],
    ["2001:db8::1", "2001:DB8:0:0:0:0:0:1", true],
    ["2001:db8::/32", "2001:db9::", false],
    ["::1/128", "::1", true],
    ["::1/128", "127.0.0.1", false],
  ])("%s contains %s: %s", (cidr, ip, expected) => {
    expect(cidrContains(cidr, ip)).toBe(expected);
  });

  test("a parsed Cidr works as well as its text", () => {
    expect(cidrContains(parseCidr("10.0.0.0/8")!, "10.9.9.9")).toBe(true);
  });

  test.each<[string, string]>([
    ["10.0.0.1/8", "10.0.0.1"],
    ["nonsense", "10.0.0.1"],
    ["10.0.0.0/8", "10.1"],
    ["10.0.0.0/8", "0x0a000001"],
    ["10.0.0.0/8", "[::ffff:10.0.0.1]"],
  ])("%s / %s throws", (cidr, ip) => {
    expect(() => cidrContains(cidr, ip)).toThrow(InvalidAddressError);
  });

  test("IPv4 and its IPv4-mapped form match every CIDR alike, as ipaddr.js says", () => {
    fc.assert(
      fc.property(anyV4, anyV4, fc.integer({ min: 0, max: 32 }), (net, ip, prefix) => {
        const base = prefix === 0 ? 0 : (net - (net % 2 ** (32 - prefix))) >>> 0;
        const cidr = `${v4Text(base)}/${prefix}`;
        const text = v4Text(ip);
        const expected = ipaddr.IPv4.parse(text).match(ipaddr.IPv4.parseCIDR(cidr));
        expect(cidrContains(cidr, text)).toBe(expected);
        expect(cidrContains(cidr, `::ffff:${text}`)).toBe(expected);
        expect(cidrContains(`::ffff:${v4Text(base)}/${prefix + 96}`, text)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});

test("ADDRESS_CLASSES lists every class once", () => {
  expect(new Set(ADDRESS_CLASSES).size).toBe(ADDRESS_CLASSES.length);
  expect(ADDRESS_CLASSES).toContain("host_interface");
});
