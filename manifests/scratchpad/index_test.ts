import { assertEquals, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

const said = (text: string) => ({ ok: true, value: { content: [{ type: "text", text }], terminate: false } });

Deno.test("jot buffers, pad reads; a turn flushes to the session's storage and is counted", async () => {
  const kit = testKit(extension, { name: "scratchpad" });
  assertEquals(await kit.prepare(), {
    ok: true,
    value: { instructions: "You have a scratchpad for this session: `jot` adds a line, `pad` reads it." },
  });
  assertEquals(
    await kit.tool("jot", { line: "check the flaky test" }),
    said("Jotted (1 not yet saved; saved after this turn)."),
  );
  assertEquals(await kit.tool("pad", {}), said("1. check the flaky test"));
  assertEquals(kit.kv.value("lines", "skv"), undefined);
  assertEquals(await kit.observe([{ kind: "turn" }]), { ok: true, value: {} });
  assertEquals(kit.kv.value("lines", "skv"), ["check the flaky test"]);
  assertEquals(kit.kv.value("turns", "skv"), 1);
  assertEquals(await kit.route("summary", ""), {
    ok: true,
    value: { response: '{"saved":["check the flaky test"],"pending":[],"turns":1}' },
  });
});

Deno.test("a long pad is a warning at preparation", async () => {
  const kit = testKit(extension, { name: "scratchpad" });
  kit.kv.set(
    "lines",
    Array.from({ length: 51 }, (_, i) => `line ${i}`),
    "skv",
  );
  const prepared = await kit.prepare({ resumed: true });
  assertEquals(prepared.ok && (prepared.value as { warnings?: string[] }).warnings, [
    "the scratchpad has 51 lines; ask the model to summarise it",
  ]);
});

Deno.test("close flushes what the last turn left; the next preparation shows the pad as context", async () => {
  const kit = testKit(extension, { name: "scratchpad" });
  await kit.prepare();
  await kit.tool("jot", { line: "ask about the release date" });
  assertEquals(await kit.close("session_closed"), { ok: true, value: {} });
  assertEquals(kit.kv.value("lines", "skv"), ["ask about the release date"]);
  assertEquals(await kit.prepare({ resumed: true }), {
    ok: true,
    value: {
      instructions: "You have a scratchpad for this session: `jot` adds a line, `pad` reads it.",
      context: "Scratchpad (1 lines, 0 turns so far):\n- ask about the release date",
    },
  });
});

Deno.test("a full storage quota is the broker's refusal at the flush", async () => {
  const { FakeKv } = await import("@tether/ext/testing");
  const kit = testKit(extension, { name: "scratchpad", kv: new FakeKv({}, 16) });
  await kit.prepare();
  await kit.tool("jot", { line: "a line longer than the quota allows" });
  assertEquals(await kit.observe([{ kind: "turn" }]), {
    ok: false,
    error: {
      code: "denied",
      msg: "observe: skv.put: storage quota of 16 bytes would be exceeded (50 bytes) (rule: limits.kv_bytes)",
    },
  });
});
