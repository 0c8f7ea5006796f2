/**
 * The mapping `tether mcp` applies, checked on its own (no satellites): a
 * manifest's `parameters` to an MCP `inputSchema`, and a tool call's report
 * to a `CallToolResult`. tests/integration/mcp.test.ts drives the real server.
 */
import { CallToolResultSchema, ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import { inputSchemaOf, resultOf } from "../../broker/mcp/server.js";
import type { ToolCallReport } from "../../broker/sessions/session.js";

function report(overrides: Partial<ToolCallReport>): ToolCallReport {
  return {
    outcome: { ok: true, value: { content: [], terminate: false } },
    extension: "worker",
    callId: "c1",
    invocationId: 7,
    arguments: "{}",
    rewrittenBy: null,
    substitutedBy: null,
    blockedBy: null,
    halt: null,
    context: [],
    notes: [],
    trace: [],
    ...overrides,
  };
}

/** Valid for the SDK's own `Tool` schema (what a client checks `tools/list` against). */
const acceptedAsTool = (inputSchema: unknown) => ToolSchema.safeParse({ name: "t", inputSchema }).success;

describe("inputSchemaOf: the manifest's parameters as an MCP inputSchema", () => {
  test("an object schema passes through whole, keywords MCP does not know included", () => {
    const parameters = {
      type: "object",
      properties: { n: { type: "integer", minimum: 1 } },
      required: ["n"],
      additionalProperties: false,
      $defs: { x: { type: "string" } },
    };
    expect(inputSchemaOf(parameters)).toEqual(parameters);
    expect(acceptedAsTool(inputSchemaOf(parameters))).toBe(true);
  });

  test("no type at the top: type object is added, the rest kept", () => {
    const parameters = { properties: { a: { type: "string" } }, required: ["a"] };
    expect(acceptedAsTool(parameters)).toBe(false); // what the SDK's client would refuse as it stands
    expect(inputSchemaOf(parameters)).toEqual({
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
    });
    expect(acceptedAsTool(inputSchemaOf(parameters))).toBe(true);
  });

  test("a type list holding object narrows to object; a schema no object satisfies is not listed (null)", () => {
    expect(inputSchemaOf({ type: ["object", "null"], properties: {} })).toEqual({ type: "object", properties: {} });
    expect(inputSchemaOf({ type: "string" })).toBeNull();
    expect(inputSchemaOf({ type: ["string", "number"] })).toBeNull();
  });

  test("boolean property schemas become their object forms, which the SDK's Tool type accepts", () => {
    const parameters = { type: "object", properties: { anything: true, nothing: false, s: { type: "string" } } };
    expect(acceptedAsTool(parameters)).toBe(false);
    expect(inputSchemaOf(parameters)).toEqual({
      type: "object",
      properties: { anything: {}, nothing: { not: {} }, s: { type: "string" } },
    });
    expect(acceptedAsTool(inputSchemaOf(parameters))).toBe(true);
  });
});

describe("resultOf: a tool call's report as a CallToolResult", () => {
  test("text blocks as they are, JSON blocks as JSON text, context lines after them; valid for the SDK", () => {
    const result = resultOf(
      report({
        outcome: {
          ok: true,
          value: {
            content: [
              { type: "text", text: "hi" },
              { type: "json", json: { a: [1, 2] } },
            ],
            terminate: true,
          },
        },
        context: ["hook says: careful"],
      }),
    );
    expect(result.content).toEqual([
      { type: "text", text: "hi" },
      { type: "text", text: '{"a":[1,2]}' },
      { type: "text", text: "hook says: careful" },
    ]);
    expect(result.isError).toBeUndefined();
    expect(result._meta).toEqual({ "tether/extension": "worker", "tether/invocation": 7, "tether/terminate": true });
    expect(CallToolResultSchema.safeParse(result).success).toBe(true);
  });

  test("a failure is isError with '<code>: <message>'; a hook's halt and block ride in _meta", () => {
    const result = resultOf(
      report({
        outcome: { ok: false, error: { code: "blocked", msg: "The turn was halted by 'hooker': enough" } },
        blockedBy: "hooker",
        halt: { reason: "enough", by: "hooker" },
        context: ["why: policy"],
      }),
    );
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      { type: "text", text: "blocked: The turn was halted by 'hooker': enough" },
      { type: "text", text: "why: policy" },
    ]);
    expect(result._meta).toMatchObject({
      "tether/halt": { reason: "enough", by: "hooker" },
      "tether/blockedBy": "hooker",
    });
    expect(CallToolResultSchema.safeParse(result).success).toBe(true);
  });

  test("a tool's outcome carries content blocks: any other value is refused by its type", () => {
    // A satellite's answer is checked where it enters (broker/satellite/answer.ts) and a hook's
    // substitute where it is read (broker/sessions/hooked-call.ts): no other value reaches here.
    // @ts-expect-error a tool's successful outcome carries a ToolReply
    const weird: ToolCallReport["outcome"] = { ok: true, value: { weird: 1 } };
    expect(weird.ok).toBe(true);
  });
});
