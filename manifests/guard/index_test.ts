import type { EventPayload } from "@tether/ext";
import { assertEquals, testKit } from "@tether/ext/testing";
import * as guard from "./index.ts";

const sh = (command: string) => ({ tool: "sh", call_id: "c1", arguments: { command } });

/** A `net.fetch` as the broker shows it to `cap_call` hooks: judged, with every address. */
function fetching(host: string, addresses: string[]): EventPayload<"cap_call"> {
  return {
    extension: "weather",
    capability: "net.fetch",
    target: `https://${host}/v1`,
    within: "tool:forecast",
    request: {
      method: "GET",
      scheme: "https",
      host,
      port: 443,
      path: "/v1",
      rule: `https://${host}/v1`,
      addresses: addresses.map((address) => ({ address, class: "public" })),
    },
  };
}

Deno.test("tool_call blocks a destructive command, saying what to do instead", async () => {
  const kit = testKit(guard, { name: "guard" });
  const reply = await kit.hook("tool_call", sh("cd /tmp && rm -rf build"));
  assertEquals(reply, {
    ok: true,
    value: {
      block:
        "guard: the arguments to 'sh' contain `rm -rf`, which this workspace does not allow; delete specific files by name, or ask the user to run it themselves.",
    },
  });
  assertEquals(await kit.hook("tool_call", sh("git push --force origin main")), {
    ok: true,
    value: {
      block:
        "guard: the arguments to 'sh' contain `git push --force`, which this workspace does not allow; push without --force, or ask the user.",
    },
  });
});

Deno.test("tool_call lets a harmless command proceed", async () => {
  const kit = testKit(guard, { name: "guard" });
  assertEquals(await kit.hook("tool_call", sh("ls -la")), { ok: true, value: {} });
});

Deno.test("/flag stores the host's normal form; cap_call then blocks it, under any spelling and by address", async () => {
  const kit = testKit(guard, { name: "guard" });
  assertEquals(await kit.command("flag", "https://API.Evil.Example./x"), {
    ok: true,
    value: {
      content: [{ type: "text", text: "flagged api.evil.example: capability calls that reach it are refused" }],
      terminate: false,
    },
  });
  assertEquals(await kit.command("flag", "127.1"), {
    ok: true,
    value: {
      content: [{ type: "text", text: "flagged 127.0.0.1: capability calls that reach it are refused" }],
      terminate: false,
    },
  });
  assertEquals(kit.kv.value("flagged"), ["api.evil.example", "127.0.0.1"]);

  assertEquals(await kit.hook("cap_call", fetching("api.evil.example", ["203.0.113.9"])), {
    ok: true,
    value: {
      block:
        "guard: api.evil.example is flagged by the operator (/flag api.evil.example); 'weather' may not reach it from tool:forecast. Tell the user instead of retrying.",
    },
  });
  const viaAddress = await kit.hook("cap_call", fetching("rebind.example", ["127.0.0.1"]));
  assertEquals(viaAddress, {
    ok: true,
    value: {
      block:
        "guard: rebind.example (reaching 127.0.0.1) is flagged by the operator (/flag 127.0.0.1); 'weather' may not reach it from tool:forecast. Tell the user instead of retrying.",
    },
  });
  assertEquals(await kit.hook("cap_call", fetching("api.example.com", ["203.0.113.10"])), { ok: true, value: {} });
});

Deno.test("/flag with no host lists the flagged ones; /unflag removes one and refuses an unknown one", async () => {
  const kit = testKit(guard, { name: "guard", kv: { flagged: ["a.example"] } });
  assertEquals(await kit.command("flag"), {
    ok: true,
    value: { content: [{ type: "text", text: "flagged: a.example" }], terminate: false },
  });
  assertEquals(await kit.command("unflag", "a.example"), {
    ok: true,
    value: { content: [{ type: "text", text: "unflagged a.example" }], terminate: false },
  });
  assertEquals(await kit.command("unflag", "a.example"), {
    ok: false,
    error: { code: "refused", msg: "a.example is not flagged" },
  });
  assertEquals(await kit.command("flag", "not a host"), {
    ok: false,
    error: { code: "refused", msg: "not a host: 'not a host' (expected /flag api.example.com)" },
  });
});

Deno.test("cap_call lets capabilities other than net.fetch proceed", async () => {
  const kit = testKit(guard, { name: "guard", kv: { flagged: ["a.example"] } });
  assertEquals(
    await kit.hook("cap_call", {
      extension: "weather",
      capability: "kv.put",
      target: "last-city",
      within: "tool:forecast",
    }),
    { ok: true, value: {} },
  );
});
