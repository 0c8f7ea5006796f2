import { assertEquals, FakeKv, testKit } from "@tether/ext/testing";
import * as weather from "./index.ts";

const LISBON = { city: "Lisbon", summary: "sunny", high_c: 24 };
// The routes stand for the approved `[net] allow` rule and the service behind it.
const SERVICE = { "GET http://127.0.0.1:17311/v1/forecast?city=Lisbon": { json: LISBON } };

Deno.test("forecast asks the service, remembers the city and answers text and JSON", async () => {
  const kit = testKit(weather, { name: "weather", net: SERVICE });
  const reply = await kit.tool("forecast", { city: "Lisbon" });
  assertEquals(reply, {
    ok: true,
    value: {
      content: [
        { type: "text", text: "Lisbon: sunny, high 24°C" },
        { type: "json", json: LISBON },
      ],
      terminate: false,
    },
  });
  assertEquals(kit.kv.value("last-city"), "Lisbon");
  assertEquals(kit.reports, ["asking the weather service about Lisbon"]);
  assertEquals(
    kit.net.requests.map((r) => `${r.method} ${r.url}`),
    ["GET http://127.0.0.1:17311/v1/forecast?city=Lisbon"],
  );
});

Deno.test("forecast refuses when the service answers an error status", async () => {
  const kit = testKit(weather, {
    name: "weather",
    net: { "GET http://127.0.0.1:17311/v1/forecast*": { status: 503, body: "down" } },
  });
  assertEquals(await kit.tool("forecast", { city: "Oslo" }), {
    ok: false,
    error: { code: "refused", msg: "The weather service answered 503 for Oslo" },
  });
  assertEquals(kit.kv.keys(), []);
});

Deno.test("forecast left uncaught: a URL no approved rule allows is the broker's refusal, with the rule", async () => {
  // An approval narrowed to no rules (`tether approve --only`): the manifest's rule allows the service.
  const kit = testKit(weather, { name: "weather", allow: [] });
  assertEquals(await kit.tool("forecast", { city: "Lisbon" }), {
    ok: false,
    error: {
      code: "denied",
      msg: "tool 'forecast': net.fetch refused: no approved rule of 'weather' allows GET http://127.0.0.1:17311/v1/forecast (rule: manifest:no-match)",
    },
  });
});

Deno.test("forecast: a full kv is refused by the quota and the tool's answer says so", async () => {
  // 10 bytes, as `[limits] kv_bytes = 10` would give: "last-city" (9) and "\"Lisbon\"" (8) do not fit.
  const kit = testKit(weather, { name: "weather", net: SERVICE, kv: new FakeKv({}, 10) });
  const reply = await kit.tool("forecast", { city: "Lisbon" });
  assertEquals(reply, {
    ok: false,
    error: {
      code: "denied",
      msg: "tool 'forecast': kv.put: storage quota of 10 bytes would be exceeded (17 bytes) (rule: limits.kv_bytes)",
    },
  });
});

Deno.test("fetch_url catches refusals: a URL no rule allows, the session's allow list, an unreachable host, a bad scheme", async () => {
  // The manifest beside this test is read: routes answer only what its `[net] allow` rule allows.
  const kit = testKit(weather, {
    name: "weather",
    net: {
      "http://127.0.0.1:17311/v1/private*": { refuse: "session:allow" },
      "http://127.0.0.1:17311/v1/slow*": { unreachable: "connect ECONNREFUSED 127.0.0.1:17311" },
      "http://127.0.0.1:17311/v1/*": { body: "hello" },
      "https://ok.example/*": { body: "never sent" },
    },
  });
  assertEquals(await kit.tool("fetch_url", { url: "https://ok.example/a" }), {
    ok: false,
    error: {
      code: "refused",
      msg: "denied: net.fetch refused: no approved rule of 'weather' allows GET https://ok.example/a (rule: manifest:no-match)",
    },
  });
  assertEquals(await kit.tool("fetch_url", { url: "http://127.0.0.1:17311/v1/private/x" }), {
    ok: false,
    error: {
      code: "refused",
      msg: "denied: net.fetch refused: the session's allow list does not include http://127.0.0.1:17311/v1/private/x (rule: session:allow)",
    },
  });
  assertEquals(await kit.tool("fetch_url", { url: "http://127.0.0.1:17311/v1/slow" }), {
    ok: false,
    error: { code: "refused", msg: "unreachable: net.fetch failed: connect ECONNREFUSED 127.0.0.1:17311" },
  });
  assertEquals(await kit.tool("fetch_url", { url: "file:///etc/passwd" }), {
    ok: false,
    error: { code: "refused", msg: "denied: net.fetch refused: scheme 'file' is not allowed (file://) (rule: url)" },
  });
  assertEquals(await kit.tool("fetch_url", { url: "http://127.0.0.1:17311/v1/a" }), {
    ok: true,
    value: { content: [{ type: "text", text: "200 from http://127.0.0.1:17311/v1/a (5 bytes)" }], terminate: false },
  });
});
