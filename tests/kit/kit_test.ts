/**
 * The test kit's own tests (run by tests/integration/test-kit.test.ts with
 * `deno test --allow-read` of this folder): `FakeDb` answers `db.query` and
 * `db.exec` as the broker does — its refusals with the broker's rules — and
 * applies a migrations folder in order; `kit.init` and `kit.service` hand the
 * initializer and a `[[service]]` route their payloads; `FakeKv` answers
 * `kv.cas` and `skv.cas` as the broker does.
 */
import { CapError, callCap, db, kv } from "@tether/cap";
import { decodeArgs, json, outcome, v, type Answer, type Init, type Service, type Tool } from "@tether/ext";
import { assertEquals, FakeDb, FakeKv, FakeModel, testKit } from "@tether/ext/testing";

const Sql = v.object({ sql: v.string(), params: v.optional(v.array(v.union([v.string(), v.number(), v.null()]))) });

/** Two tools, each one `db` call; a refusal left uncaught is the answer, as in the broker. */
const tools: Record<string, Tool> = {
  query: async (args) => {
    const { sql, params } = decodeArgs(Sql, args);
    return outcome([json(await db.query(sql, params))]);
  },
  exec: async (args) => {
    const { sql, params } = decodeArgs(Sql, args);
    return outcome([json(await db.exec(sql, params))]);
  },
};

const value = (answer: Answer) =>
  answer.ok ? (answer.value as { content: { json: unknown }[] }).content[0]!.json : `refused: ${answer.error.msg}`;
const refusal = (answer: Answer) => (answer.ok ? "answered" : `${answer.error.code}: ${answer.error.msg}`);

Deno.test("db.exec and db.query round-trip bound values through the kit's FakeDb", async () => {
  const kit = testKit({ tools });
  assertEquals(value(await kit.tool("exec", { sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)" })), {
    changes: 0,
    lastInsertRowid: 0,
  });
  assertEquals(value(await kit.tool("exec", { sql: "INSERT INTO notes (text) VALUES (?)", params: ["hello"] })), {
    changes: 1,
    lastInsertRowid: 1,
  });
  assertEquals(
    value(await kit.tool("query", { sql: "SELECT id, text FROM notes WHERE text = ?", params: ["hello"] })),
    [{ id: 1, text: "hello" }],
  );
  assertEquals(kit.db.rows("SELECT count(*) AS n FROM notes"), [{ n: 1 }]);
});

Deno.test("what the broker refuses, the FakeDb refuses, with the broker's rule", async () => {
  const kit = testKit({ tools }, { db: new FakeDb() });
  kit.db.run("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)");
  const cases: Array<[tool: string, sql: string, rule: string]> = [
    ["exec", "INSERT INTO notes (text) VALUES ('a'); DROP TABLE notes", "storage.one_statement"],
    ["exec", "ATTACH DATABASE 'other.db' AS other", "storage.attach"],
    ["exec", "DETACH DATABASE other", "storage.attach"],
    ["query", "SELECT load_extension('evil')", "storage.load_extension"],
    ["exec", "VACUUM", "storage.vacuum"],
    ["exec", "PRAGMA journal_mode = DELETE", "storage.pragma"],
    ["exec", "BEGIN", "storage.statement"],
    ["query", "INSERT INTO notes (text) VALUES ('a')", "storage.statement"],
    ["exec", "SELECT * FROM notes", "storage.statement"],
    ["query", "SELECT * FROM nowhere", "storage.sql"],
  ];
  for (const [tool, sql, rule] of cases) {
    const said = refusal(await kit.tool(tool, { sql }));
    assertEquals(
      [
        sql,
        said.startsWith(`denied: ${tool} '${tool}': db.${tool}: `) ||
          said.startsWith(`denied: tool '${tool}': db.${tool}: `),
        said.endsWith(`(rule: ${rule})`),
      ],
      [sql, true, true],
    );
  }
  assertEquals(
    refusal(await kit.tool("query", { sql: "INSERT INTO notes (text) VALUES ('a')" })),
    "denied: tool 'query': db.query: this statement returns no rows; use db.exec (rule: storage.statement)",
  );
  // Nothing refused ran: the table is as it was.
  assertEquals(kit.db.rows("SELECT count(*) AS n FROM notes"), [{ n: 0 }]);
  // A read-only PRAGMA is allowed, as in the broker.
  assertEquals(value(await kit.tool("query", { sql: "PRAGMA user_version" })), [{ user_version: 0 }]);
});

Deno.test("the quota: a write past max_bytes is refused with storage.max_bytes", async () => {
  const kit = testKit({ tools }, { db: { maxBytes: 65_536 } });
  kit.db.run("CREATE TABLE blobs (text TEXT)");
  let said = "";
  for (let i = 0; i < 40 && said === ""; i++) {
    const answer = await kit.tool("exec", { sql: "INSERT INTO blobs (text) VALUES (?)", params: ["x".repeat(4000)] });
    if (!answer.ok) said = refusal(answer);
  }
  assertEquals(
    said,
    "denied: tool 'exec': db.exec: the database would grow past its quota of 65536 bytes ([storage] max_bytes) (rule: storage.max_bytes)",
  );
});

Deno.test("new FakeDb({ migrations }) applies NNNN_name.sql files in order, statements split at ';'", () => {
  const fake = new FakeDb({ migrations: new URL("./migrations", import.meta.url) });
  assertEquals(fake.migrations, ["0001_notes.sql", "0002_pinned.sql"]);
  // As the broker does at approval: the database says how many migrations it has.
  assertEquals(fake.rows("PRAGMA user_version"), [{ user_version: 2 }]);
  assertEquals(fake.rows("SELECT text, pinned FROM notes"), [{ text: "first; with a semicolon", pinned: 0 }]);
  const byPath = new FakeDb({ migrations: new URL("./migrations", import.meta.url).pathname });
  assertEquals(byPath.migrations, ["0001_notes.sql", "0002_pinned.sql"]);
});

Deno.test("kit.init hands the initializer its payload; its answer and what it stored are there", async () => {
  const init: Init = async (payload) => {
    await db.exec("CREATE TABLE IF NOT EXISTS notes (text TEXT)");
    await db.exec("INSERT INTO notes (text) VALUES (?)", [`seeded for ${payload.version} (${payload.reason})`]);
    await kv.put("seeded", true);
    return { message: "seeded 1 note" };
  };
  const kit = testKit({ init }, { version: "2.1.0" });
  assertEquals(await kit.init(), { ok: true, value: { message: "seeded 1 note" } });
  assertEquals(kit.db.rows("SELECT text FROM notes"), [{ text: "seeded for 2.1.0 (approved)" }]);
  assertEquals(kit.kv.value("seeded"), true);
  assertEquals(await kit.init({ reason: "start" }), { ok: true, value: { message: "seeded 1 note" } });
  // One that answers nothing answers {}; one that throws is crashed.
  assertEquals(await testKit({ init: () => {} }).init(), { ok: true, value: {} });
  const failing = await testKit({
    init: () => {
      throw new Error("no seed file");
    },
  }).init();
  assertEquals(failing, { ok: false, error: { code: "crashed", msg: "Error: no seed file" } });
});

Deno.test("kit.service builds the request from its parts and answers the response", async () => {
  const echo: Service = (request) => ({
    status: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request),
  });
  const kit = testKit({ services: { echo } });
  const answer = await kit.service("echo", {
    method: "post",
    path: "/notes/1",
    query: "?full=1",
    headers: { "Content-Type": "text/plain" },
    body: "hi",
  });
  if (!answer.ok) throw new Error(`answered ${answer.error.msg}`);
  const response = answer.value as { status: number; body: string; body_encoding: string };
  assertEquals([response.status, response.body_encoding], [200, "text"]);
  assertEquals(JSON.parse(response.body), {
    route: "echo",
    method: "POST",
    path: "/notes/1",
    query: "full=1",
    headers: { "content-type": "text/plain" },
    body: "hi",
    body_encoding: "text",
  });
  const bytes = await kit.service("echo", { body: new Uint8Array([0xff, 0x00]) });
  if (!bytes.ok) throw new Error(`answered ${bytes.error.msg}`);
  assertEquals(JSON.parse((bytes.value as { body: string }).body).body, "/wA=");
  assertEquals((await kit.service("nothing")).ok, false);
});

Deno.test("kv.cas and skv.cas: the FakeKv swaps, answers the current value, and refuses as the broker does", async () => {
  /** A counter shared across sessions: get, then cas until it swaps; answers the count and the retries. */
  const bump: Tool = async (args) => {
    const { stale } = decodeArgs(v.object({ stale: v.optional(v.string()) }), args);
    let seen = stale ?? ((await kv.get("hits")) as string | null);
    let retries = 0;
    for (;;) {
      const next = String(Number(seen ?? "0") + 1);
      const swapped = await kv.cas("hits", seen, next);
      if (swapped.ok) return outcome([json({ count: next, retries })]);
      seen = swapped.current;
      retries++;
    }
  };
  /** Every raw answer, refusals in the broker's words. */
  const raw: Tool = async (args) => {
    const { cap, a } = decodeArgs(v.object({ cap: v.string(), a: v.unknown() }), args);
    try {
      return outcome([json(await callCap(cap, a))]);
    } catch (err) {
      if (err instanceof CapError) return outcome([json(`${err.code}: ${err.message}`)]);
      throw err;
    }
  };
  const kit = testKit({ tools: { bump, raw } }, { kv: new FakeKv({ bytes: new Uint8Array([1]), number: 7 }, 64) });
  assertEquals(value(await kit.tool("bump")), { count: "1", retries: 0 });
  assertEquals(value(await kit.tool("bump")), { count: "2", retries: 0 });
  // A read another session made stale: the first cas answers "2", the retry swaps.
  assertEquals(value(await kit.tool("bump", { stale: "0" })), { count: "3", retries: 1 });
  assertEquals(kit.kv.value("hits"), "3");
  const cas = async (cap: string, a: unknown) => value(await kit.tool("raw", { cap, a }));
  assertEquals(await cas("kv.cas", { key: "hits", expected: null, value: "x" }), { ok: false, current: "3" });
  assertEquals(await cas("kv.cas", { key: "gone", expected: "1", value: "x" }), { ok: false, current: null });
  assertEquals(await cas("kv.cas", { key: "hits", expected: "3", value: null }), { ok: true });
  assertEquals(kit.kv.value("hits"), undefined);
  // skv is the session's own: the same key is apart from kv's.
  assertEquals(await cas("skv.cas", { key: "hits", expected: null, value: "s" }), { ok: true });
  assertEquals([kit.kv.value("hits", "skv"), kit.kv.value("hits")], ["s", undefined]);
  // Refused as the broker refuses: not a string, past the quota, malformed.
  assertEquals(
    await cas("kv.cas", { key: "bytes", expected: null, value: "x" }),
    "denied: kv.cas: the key holds bytes; cas compares and swaps strings only (rule: cas.string)",
  );
  assertEquals(
    await cas("kv.cas", { key: "number", expected: "7", value: "8" }),
    "denied: kv.cas: the key holds JSON other than a string; cas compares and swaps strings only (rule: cas.string)",
  );
  // Stored: 5 + 1 (bytes), 6 + 1 (number), 4 + 3 (skv "s") = 20 of 64; 4 + 2 + 40 more would make 66.
  assertEquals(
    await cas("kv.cas", { key: "long", expected: null, value: "x".repeat(40) }),
    "denied: kv.cas: storage quota of 64 bytes would be exceeded (66 bytes) (rule: limits.kv_bytes)",
  );
  assertEquals(kit.kv.value("long"), undefined);
  assertEquals(
    await cas("skv.cas", { key: "k", value: "x" }),
    "bad_arguments: skv.cas takes {key, expected, value}: expected and value each a string or null; a key is 1 to 512 characters, without NUL (rule: args)",
  );
});

Deno.test("the FakeModel charges and cuts as the broker does: a long answer under-reported", async () => {
  const model = new FakeModel({ answer: { text: "y".repeat(4096), usage: { input_tokens: 0, output_tokens: 0 } } });
  const request = { model: "m", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 16 };
  const reply = (await model.serve({ request })) as {
    ok: boolean;
    value: { text: string; usage: { input_tokens: number; output_tokens: number }; stop_reason: string };
  };
  // 16 tokens bear 16 × 8 bytes; the floor charges a token per 8 bytes, of the request's JSON and of the text.
  assertEquals(reply.value.text.length, 16 * 8);
  assertEquals(reply.value.stop_reason, "max_tokens");
  assertEquals(reply.value.usage, {
    input_tokens: Math.ceil(JSON.stringify(request).length / 8),
    output_tokens: 16,
  });
  assertEquals(model.usedTokens, reply.value.usage.input_tokens + 16);
});
