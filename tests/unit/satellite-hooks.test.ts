/**
 * `decodeVerdict`: nothing a satellite answers is trusted — a verdict must be
 * JSON text of exactly its event's verdict shape, or the hook counts as failed.
 */
import { decodeVerdict } from "../../broker/sessions/satellite-hooks.js";

describe("decodeVerdict()", () => {
  test("a verdict that fits its event is decoded", () => {
    expect(decodeVerdict("tool_call", '{"block":"no","notes":["n"]}')).toEqual({
      ok: true,
      verdict: { block: "no", notes: ["n"] },
    });
    expect(decodeVerdict("context", '{"messages":[{"role":"user"}]}')).toEqual({
      ok: true,
      verdict: { messages: [{ role: "user" }] },
    });
  });

  test("a field the event does not take is refused, naming it", () => {
    const decoded = decodeVerdict("session_start", '{"block":"stop the session"}');
    expect(decoded.ok).toBe(false);
    expect(!decoded.ok && decoded.reason).toMatch(/^answered a verdict that does not fit 'session_start': .*block/);
  });

  test("before_compact cannot block, cap_call cannot rewrite", () => {
    expect(decodeVerdict("before_compact", '{"block":"no"}').ok).toBe(false);
    expect(decodeVerdict("cap_call", '{"arguments":{}}').ok).toBe(false);
    expect(decodeVerdict("cap_call", '{"block":"flagged"}')).toEqual({ ok: true, verdict: { block: "flagged" } });
  });

  test("wrong types are refused with the field named", () => {
    const decoded = decodeVerdict("tool_call", '{"block":7}');
    expect(!decoded.ok && decoded.reason).toMatch(/at \.block/);
  });

  test("not JSON, or not text at all, is a failure", () => {
    expect(decodeVerdict("tool_call", "{oops")).toEqual({ ok: false, reason: "answered a verdict that is not JSON" });
    expect(decodeVerdict("tool_call", { block: "x" })).toEqual({
      ok: false,
      reason: "answered something other than a verdict's JSON text",
    });
  });

  test("usage answers are ignored whatever they hold", () => {
    expect(decodeVerdict("usage", '{"block":"anything"}')).toEqual({ ok: true, verdict: {} });
  });

  test("oversized text is refused rather than passed on", () => {
    const decoded = decodeVerdict("tool_call", JSON.stringify({ context: "x".repeat(70 * 1024) }));
    expect(decoded.ok).toBe(false);
  });
});
