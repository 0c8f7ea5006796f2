/**
 * The wire frames as valibot schemas: what each direction accepts and refuses.
 */
import fc from "fast-check";
import * as v from "valibot";
import {
  BrokerFrame,
  Call,
  Cancel,
  Cap,
  CapResult,
  ContentBlock,
  Hello,
  Result,
  SatelliteFrame,
  ToolValue,
  WireError,
  describeIssues,
} from "../../jail-runtime/wire/frames.js";
import { brokerFrame, satelliteFrame, toolValue } from "./support/arbitraries.js";

/** The one-line description of why `input` fails `schema`; fails the test if it passes. */
function rejection(schema: v.GenericSchema, input: unknown): string {
  const parsed = v.safeParse(schema, input);
  if (parsed.success) throw new Error(`Expected ${JSON.stringify(input)} to be refused`);
  return describeIssues(parsed.issues);
}

const call = {
  t: "call",
  id: 1,
  token: "tok",
  kind: "tool",
  name: "weather",
  args: '{"city":"Lisbon"}',
  strand: "s1",
  deadline_ms: 30_000,
};
const hello = {
  t: "hello",
  boot: "b".repeat(64),
  runtime: "tether-deno/1",
  tools: ["a", "b"],
  hooks: ["tool_call"],
  commands: [],
  contexts: [],
  routes: [],
  compactions: [],
  providers: [],
  services: [],
  searches: [],
  handles: [],
};
const cap = { t: "cap", id: 2, token: "tok", cap: "net.fetch", args: JSON.stringify({ url: "https://example.org" }) };

describe("frame schemas accept what the wire carries", () => {
  test("SatelliteFrame accepts every valid satellite frame and returns it unchanged", () => {
    fc.assert(fc.property(satelliteFrame, (frame) => expect(v.parse(SatelliteFrame, frame)).toEqual(frame)));
  });

  test("BrokerFrame accepts every valid broker frame and returns it unchanged", () => {
    fc.assert(fc.property(brokerFrame, (frame) => expect(v.parse(BrokerFrame, frame)).toEqual(frame)));
  });

  test("ToolValue accepts text and json blocks with a terminate flag", () => {
    fc.assert(fc.property(toolValue, (value) => expect(v.parse(ToolValue, value)).toEqual(value)));
  });

  test("each direction refuses the other direction's frames", () => {
    fc.assert(fc.property(satelliteFrame, (frame) => expect(v.is(BrokerFrame, frame)).toBe(false)));
    fc.assert(fc.property(brokerFrame, (frame) => expect(v.is(SatelliteFrame, frame)).toBe(false)));
  });

  test("Call accepts every kind the broker sends", () => {
    for (const kind of ["tool", "event", "command", "context", "prepare", "close", "observe", "route", "compact"])
      expect(v.is(Call, { ...call, kind })).toBe(true);
  });

  test("ids accept 0 and Number.MAX_SAFE_INTEGER", () => {
    expect(v.is(Cancel, { t: "cancel", id: 0 })).toBe(true);
    expect(v.is(Cancel, { t: "cancel", id: Number.MAX_SAFE_INTEGER })).toBe(true);
  });

  test("names accept 256 UTF-16 units and tokens 128", () => {
    expect(v.is(Call, { ...call, name: "n".repeat(256), token: "k".repeat(128) })).toBe(true);
  });

  test("objects strip fields the schema does not name", () => {
    const parsed = v.parse(SatelliteFrame, { ...hello, extra: "smuggled", __proto_: 1 });
    expect(parsed).toStrictEqual(hello);
    expect(Object.keys(parsed)).not.toContain("extra");
    expect(v.parse(WireError, { code: "denied", msg: "no", rule: "x" })).toStrictEqual({ code: "denied", msg: "no" });
  });

  test("Result and CapResult leave value and error optional", () => {
    expect(v.is(Result, { t: "result", id: 1, ok: true })).toBe(true);
    expect(v.is(CapResult, { t: "cap_result", id: 1, ok: false, error: { code: "denied", msg: "rule r1" } })).toBe(
      true,
    );
    expect(v.is(Cap, { t: "cap", id: 1, token: "x", cap: "kv.get", args: undefined })).toBe(false); // args is JSON text, always present
  });
});

describe("frame schemas refuse what the wire must not carry", () => {
  test("a frame whose t names no frame of that direction is refused at .t", () => {
    expect(rejection(BrokerFrame, { ...call, t: "hello" })).toBe(
      'Invalid type: Expected ("call" | "cap_result" | "cancel") but received "hello" at .t',
    );
    expect(rejection(SatelliteFrame, { t: "outcome", id: 1 })).toBe(
      'Invalid type: Expected ("hello" | "cap" | "result") but received "outcome" at .t',
    );
    expect(rejection(SatelliteFrame, { id: 1 })).toMatch(/received undefined at \.t$/);
  });

  test.each([
    ["negative", -1, "Invalid value: Expected >=0 but received -1 at .id"],
    ["fractional", 1.5, "Invalid integer: Received 1.5 at .id"],
    [
      "past MAX_SAFE_INTEGER",
      2 ** 53,
      `Invalid value: Expected <=${Number.MAX_SAFE_INTEGER} but received ${2 ** 53} at .id`,
    ],
    ["a string", "1", 'Invalid type: Expected number but received "1" at .id'],
    ["NaN", Number.NaN, "Invalid type: Expected number but received NaN at .id"],
  ])("an id that is %s is refused", (_what, id, message) => {
    expect(rejection(BrokerFrame, { t: "cancel", id })).toBe(message);
  });

  test("a non-integer deadline is refused at .deadline_ms", () => {
    expect(rejection(Call, { ...call, deadline_ms: Infinity })).toMatch(/ at \.deadline_ms$/);
  });

  test("over-long names and tokens are refused with the bound", () => {
    expect(rejection(Call, { ...call, name: "n".repeat(257) })).toBe(
      "Invalid length: Expected <=256 but received 257 at .name",
    );
    expect(rejection(Call, { ...call, token: "k".repeat(129) })).toBe(
      "Invalid length: Expected <=128 but received 129 at .token",
    );
    expect(rejection(Hello, { ...hello, boot: "b".repeat(129) })).toBe(
      "Invalid length: Expected <=128 but received 129 at .boot",
    );
    expect(rejection(Cap, { ...cap, cap: "c".repeat(257) })).toBe(
      "Invalid length: Expected <=256 but received 257 at .cap",
    );
    expect(rejection(Hello, { ...hello, tools: ["ok", "t".repeat(257)] })).toBe(
      "Invalid length: Expected <=256 but received 257 at .tools.1",
    );
  });

  test("hello refuses more than 1024 tools or hooks", () => {
    expect(v.is(Hello, { ...hello, tools: Array.from({ length: 1024 }, (_, i) => `t${i}`) })).toBe(true);
    expect(rejection(Hello, { ...hello, hooks: Array.from({ length: 1025 }, (_, i) => `h${i}`) })).toBe(
      "Invalid length: Expected <=1024 but received 1025 at .hooks",
    );
  });

  test("an error code over 256 characters or a message over 64 KiB is refused", () => {
    expect(rejection(Result, { t: "result", id: 1, ok: false, error: { code: "c".repeat(257), msg: "" } })).toBe(
      "Invalid length: Expected <=256 but received 257 at .error.code",
    );
    expect(
      rejection(CapResult, {
        t: "cap_result",
        id: 1,
        ok: false,
        error: { code: "denied", msg: "m".repeat(64 * 1024 + 1) },
      }),
    ).toBe(`Invalid length: Expected <=${64 * 1024} but received ${64 * 1024 + 1} at .error.msg`);
  });

  test("an unknown call kind is refused at .kind", () => {
    expect(rejection(Call, { ...call, kind: "outcome" })).toBe(
      'Invalid type: Expected ("tool" | "event" | "command" | "context" | "prepare" | "close" | "observe" | "route" | "compact" | "complete" | "service" | "init" | "search") but received "outcome" at .kind',
    );
  });

  test.each(Object.keys(call).filter((k) => k !== "t"))("a call without %s is refused, naming it", (field) => {
    const partial: Record<string, unknown> = { ...call };
    delete partial[field];
    expect(rejection(Call, partial)).toBe(`Invalid key: Expected "${field}" but received undefined at .${field}`);
  });

  test("args that are not JSON text are refused: a call carries the caller's bytes as a string", () => {
    expect(rejection(Call, { ...call, args: { city: "Lisbon" } })).toBe(
      "Invalid type: Expected string but received Object at .args",
    );
  });

  test("ok must be a boolean", () => {
    expect(rejection(Result, { t: "result", id: 1, ok: "yes" })).toBe(
      'Invalid type: Expected boolean but received "yes" at .ok',
    );
  });

  test("ToolValue refuses unknown block types, a missing terminate and a text block without text", () => {
    expect(rejection(ToolValue, { content: [{ type: "video", data: "" }], terminate: false })).toBe(
      'Invalid type: Expected ("text" | "json" | "image" | "audio" | "resource") but received "video" at .content.0.type',
    );
    // A media block is checked whole: its media type is required.
    expect(rejection(ToolValue, { content: [{ type: "image", data: "" }], terminate: false })).toBe(
      'Invalid key: Expected "mimeType" but received undefined at .content.0.mimeType',
    );
    expect(rejection(ToolValue, { content: [] })).toBe(
      'Invalid key: Expected "terminate" but received undefined at .terminate',
    );
    expect(rejection(ContentBlock, { type: "text" })).toBe(
      'Invalid key: Expected "text" but received undefined at .text',
    );
  });
});

describe("describeIssues()", () => {
  test("describeIssues() joins every issue with '; ', each naming its field", () => {
    const parsed = v.safeParse(Call, { ...call, id: -1, name: 7, kind: "x" });
    expect(parsed.success).toBe(false);
    if (parsed.success) return;
    expect(describeIssues(parsed.issues)).toBe(
      [
        "Invalid value: Expected >=0 but received -1 at .id",
        'Invalid type: Expected ("tool" | "event" | "command" | "context" | "prepare" | "close" | "observe" | "route" | "compact" | "complete" | "service" | "init" | "search") but received "x" at .kind',
        "Invalid type: Expected string but received 7 at .name",
      ].join("; "),
    );
  });

  test("describeIssues() leaves the path off an issue about the whole value", () => {
    const parsed = v.safeParse(Cancel, 5);
    expect(parsed.success).toBe(false);
    if (parsed.success) return;
    expect(describeIssues(parsed.issues)).toBe("Invalid type: Expected Object but received 5");
  });

  test("describeIssues() renders no issues as the empty string", () => {
    expect(describeIssues([])).toBe("");
  });
});
