import { assertEquals, FakeDb, testKit } from "@tether/ext/testing";
import * as extension from "./index.ts";

const migrations = new URL("./migrations", import.meta.url);
const said = (text: string) => ({ ok: true, value: { content: [{ type: "text", text }], terminate: false } });

Deno.test("init seeds a welcome note once; add and list use the migrated table, pinned first", async () => {
  const kit = testKit(extension, { name: "notes", db: new FakeDb({ migrations }) });
  assertEquals(await kit.init({ version: "1.1.0" }), { ok: true, value: { message: "1.1.0: seeded a welcome note" } });
  assertEquals(await kit.init({ version: "1.2.0" }), { ok: true, value: { message: "1.2.0: 1 notes kept" } });
  assertEquals(await kit.tool("add", { text: "buy milk" }), said("note 2 saved"));
  assertEquals(await kit.tool("pin", { id: 2 }), said("note 2 pinned"));
  const listed = await kit.tool("list", {});
  assertEquals(
    listed.ok && (listed.value as { content: Array<{ text?: string }> }).content[0]!.text,
    "📌 2. buy milk\n1. Welcome: add notes with the add tool",
  );
});

Deno.test("before migration 0002 the code still lists, and pin says which version it needs", async () => {
  const db = new FakeDb();
  db.run("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, created_at INTEGER NOT NULL)");
  db.run("PRAGMA user_version = 1");
  const kit = testKit(extension, { name: "notes", db });
  assertEquals(await kit.tool("add", { text: "first" }), said("note 1 saved"));
  assertEquals(
    await kit.tool("pin", { id: 1 }),
    said("pinning needs migration 0002: ask the operator to approve notes 1.1.0"),
  );
  const listed = await kit.tool("list", {});
  assertEquals(listed.ok && (listed.value as { content: Array<{ text?: string }> }).content[0]!.text, "1. first");
});

Deno.test("the services answer the notes as JSON and as an escaped HTML page", async () => {
  const kit = testKit(extension, { name: "notes", db: new FakeDb({ migrations }) });
  await kit.tool("add", { text: "<script>x</script>" });
  const page = await kit.service("page", { path: "/" });
  assertEquals(
    page.ok && (page.value as { body: string }).body.includes("<li>&#60;script&#62;x&#60;/script&#62;</li>"),
    true,
  );
  const listed = await kit.service("json", { path: "/notes.json" });
  assertEquals(
    listed.ok && JSON.parse((listed.value as { body: string }).body).notes.map((n: { text: string }) => n.text),
    ["<script>x</script>"],
  );
});
