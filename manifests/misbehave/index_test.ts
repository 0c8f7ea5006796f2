/**
 * What can run in a test process. `loop`, `bomb` and `wedge` block or exhaust
 * the process they run in, so only a broker can stop them: they are tested
 * against real satellites (tests/integration/satellite.test.ts).
 */
import { assertEquals, testKit } from "@tether/ext/testing";
import * as misbehave from "./index.ts";

const kit = () => testKit(misbehave, { name: "misbehave" });

Deno.test("throw is answered crashed, with the error's name and message only", async () => {
  assertEquals(await kit().tool("throw"), { ok: false, error: { code: "crashed", msg: "Error: boom, as asked" } });
});

Deno.test("sleep ends early when the deadline aborts its signal", async () => {
  assertEquals(await kit().tool("sleep", { ms: 10 }), {
    ok: true,
    value: { content: [{ type: "text", text: "slept 10 ms" }], terminate: false },
  });
  assertEquals(await kit().tool("sleep", { ms: 60_000 }, { deadlineMs: 20 }), {
    ok: true,
    value: { content: [{ type: "text", text: "aborted" }], terminate: false },
  });
});

Deno.test("bad_value is crashed: the broker reads a malformed tool value", async () => {
  const reply = await kit().tool("bad_value");
  assertEquals(reply.ok, false);
  if (!reply.ok)
    assertEquals(reply.error.msg.startsWith("'bad_value' answered a malformed tool value"), true, reply.error.msg);
});

Deno.test("garbage sends a frame the broker rejects: the call is crashed", async () => {
  const reply = await kit().tool("garbage");
  assertEquals(reply.ok, false);
  if (!reply.ok) assertEquals([reply.error.code, reply.error.msg.includes("Bad 'cap' frame")], ["crashed", true]);
});

Deno.test("cap_later: a capability call after the answer carries no open token and is refused", async () => {
  const printed: string[] = [];
  const log = console.log;
  console.log = (line: string) => printed.push(line);
  try {
    assertEquals(await kit().tool("cap_later"), {
      ok: true,
      value: { content: [{ type: "text", text: "answered; a capability call follows" }], terminate: false },
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
  } finally {
    console.log = log;
  }
  assertEquals(printed, ["cap_later: refused token_revoked"]);
});

Deno.test("big answers kb kilobytes of text; spew of 0 MiB writes nothing", async () => {
  const reply = await kit().tool("big", { kb: 2 });
  assertEquals(reply, { ok: true, value: { content: [{ type: "text", text: "y".repeat(2048) }], terminate: false } });
  assertEquals(await kit().tool("spew", { mb: 0 }), {
    ok: true,
    value: { content: [{ type: "text", text: "wrote 0 MiB to each stream" }], terminate: false },
  });
});

Deno.test("exit asks Deno to end the process with code 7", async () => {
  const exit = Deno.exit;
  const codes: (number | undefined)[] = [];
  Deno.exit = ((code?: number) => {
    codes.push(code);
    throw new Error("exit was called");
  }) as typeof Deno.exit;
  try {
    assertEquals(await kit().tool("exit"), { ok: false, error: { code: "crashed", msg: "Error: exit was called" } });
  } finally {
    Deno.exit = exit;
  }
  assertEquals(codes, [7]);
});
