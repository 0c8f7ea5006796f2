/**
 * `[[hook]] match`: the glob (anchored, `*` and `?`, case-sensitive, no
 * backtracking blow-up), each event's subject, and which patterns match it.
 */
import { globMatches } from "../../broker/hooks/hook-matcher.js";
import { describeHook, matchesSubject, subjectOf } from "../../broker/hooks/hook-subject.js";

describe("globMatches()", () => {
  test.each([
    ["echo", "echo", true],
    ["echo", "echo2", false],
    ["echo", "my_echo", false],
    ["fs_*", "fs_read", true],
    ["fs_*", "fs_", true],
    ["fs_*", "xfs_read", false],
    ["*_read", "fs_read", true],
    ["*_read", "fs_read_all", false],
    ["f?_read", "fs_read", true],
    ["f?_read", "f_read", false],
    ["?", "", false],
    ["*", "", true],
    ["*", "anything.at-all", true],
    ["a*b*c", "aXXbYYc", true],
    ["a*b*c", "aXXbYY", false],
    ["a*a*b", "aaab", true],
    ["Echo", "echo", false],
    ["kv.*", "kv.put", true],
    ["kv.*", "kvXput", false],
    ["*.example.com", "api.example.com", true],
    ["*.example.com", "a.b.example.com", true],
    ["*.example.com", "example.com", false],
    ["*.example.com", "evilexample.com", false],
  ])("%p against %p: %p", (glob, value, expected) => {
    expect(globMatches(glob, value)).toBe(expected);
  });

  // Backtracking only to the last star keeps a match within |glob| × |value| steps; a
  // RegExp-style matcher would take exponential time here and never answer.
  test("a pattern full of stars against a long near-miss is refused (no exponential backtracking)", () => {
    expect(globMatches("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a".repeat(253))).toBe(false);
    expect(globMatches("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", `${"a".repeat(252)}b`)).toBe(true);
  });
});

describe("subjectOf()", () => {
  test("tool events: the tool's name", () => {
    expect(subjectOf("tool_call", { tool: "echo", call_id: "c", arguments: {} })).toEqual({ name: "echo" });
    expect(subjectOf("tool_result", { tool: "fs_read" })).toEqual({ name: "fs_read" });
  });

  test("cap_call: the capability, and the judged host of a net call (never the raw spelling)", () => {
    const request = {
      method: "GET",
      scheme: "https",
      host: "api.example.com",
      port: 443,
      path: "/",
      rule: "r",
      addresses: [],
    };
    expect(subjectOf("cap_call", { capability: "net.fetch", target: "https://API.Example.com./x", request })).toEqual({
      name: "net.fetch",
      host: "api.example.com",
    });
    expect(subjectOf("cap_call", { capability: "kv.put", target: "settings" })).toEqual({ name: "kv.put", host: null });
  });

  test("cap_call without a judged request: the host of a URL target", () => {
    expect(subjectOf("cap_call", { capability: "net.fetch", target: "https://api.example.com/x" })).toEqual({
      name: "net.fetch",
      host: "api.example.com",
    });
  });

  test("other events have no subject", () => {
    expect(subjectOf("session_start", { source: "startup" })).toBeNull();
    expect(subjectOf("usage", {})).toBeNull();
  });
});

describe("matchesSubject()", () => {
  test("no match list: every subject (today's behaviour)", () => {
    expect(matchesSubject(undefined, { name: "anything" })).toBe(true);
  });

  test("any one pattern is enough; none matching means the hook is not asked", () => {
    expect(matchesSubject(["echo", "fs_*"], { name: "fs_write" })).toBe(true);
    expect(matchesSubject(["echo", "fs_*"], { name: "echo" })).toBe(true);
    expect(matchesSubject(["echo", "fs_*"], { name: "shell" })).toBe(false);
  });

  test("a capability pattern without a host matches every host", () => {
    expect(matchesSubject(["net.fetch"], { name: "net.fetch", host: "anywhere.example" })).toBe(true);
    expect(matchesSubject(["kv.*"], { name: "kv.put", host: null })).toBe(true);
    expect(matchesSubject(["kv.*"], { name: "net.fetch", host: "kv.example" })).toBe(false);
  });

  test("a host narrows net calls to matching hosts", () => {
    const only = ["net.fetch *.example.com", "net.fetch example.com"];
    expect(matchesSubject(only, { name: "net.fetch", host: "api.example.com" })).toBe(true);
    expect(matchesSubject(only, { name: "net.fetch", host: "example.com" })).toBe(true);
    expect(matchesSubject(only, { name: "net.fetch", host: "example.org" })).toBe(false);
    expect(matchesSubject(only, { name: "net.fetchx", host: "api.example.com" })).toBe(false);
    expect(matchesSubject(["net.* 10.0.0.?"], { name: "net.fetch", host: "10.0.0.5" })).toBe(true);
  });

  test("a call whose host is unknown is asked about by a host pattern (a guard sees too much, not too little)", () => {
    expect(matchesSubject(["net.fetch *.example.com"], { name: "net.fetch", host: null })).toBe(true);
    expect(matchesSubject(["net.fetch *.example.com"], { name: "net.fetch" })).toBe(true);
  });

  test("an event without a subject is always asked (the manifest refuses match there anyway)", () => {
    expect(matchesSubject(["echo"], null)).toBe(true);
  });
});

test("describeHook() shows the matcher after the event", () => {
  expect(describeHook("tool_call", undefined)).toBe("tool_call");
  expect(describeHook("cap_call", ["kv.put", "net.fetch *.example.com"])).toBe(
    "cap_call (only: kv.put, net.fetch *.example.com)",
  );
});
