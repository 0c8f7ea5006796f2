/**
 * Notes in the extension's own database. The schema is the broker's to
 * apply (migrations/, run when the operator approves a version), so the code
 * never creates tables; it reads `pinned` only where 0002 has added it
 * (`PRAGMA user_version` says how many migrations the database has).
 */
import { db } from "@tether/cap";
import { decodeArgs, json, outcome, text, v, type Init, type Service, type Tool } from "@tether/ext";

interface Note {
  readonly id: number;
  readonly text: string;
  readonly created_at: number;
  readonly pinned: boolean;
}

async function migrations(): Promise<number> {
  const [row] = await db.query("PRAGMA user_version");
  return Number(row?.user_version ?? 0);
}

async function allNotes(): Promise<Note[]> {
  const pinned = (await migrations()) >= 2;
  const rows = await db.query(
    pinned
      ? "SELECT id, text, created_at, pinned FROM notes ORDER BY pinned DESC, id LIMIT 500"
      : "SELECT id, text, created_at FROM notes ORDER BY id LIMIT 500",
  );
  return rows.map((r) => ({
    id: Number(r.id),
    text: String(r.text),
    created_at: Number(r.created_at),
    pinned: r.pinned === 1,
  }));
}

const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Once per approved version, after its migrations: a welcome note in an empty database. */
export const init: Init = async ({ version }) => {
  const [row] = await db.query("SELECT count(*) AS n FROM notes");
  const n = Number(row?.n ?? 0);
  if (n > 0) return { message: `${version}: ${n} notes kept` };
  await db.exec("INSERT INTO notes (text, created_at) VALUES (?, ?)", [
    "Welcome: add notes with the add tool",
    Date.now(),
  ]);
  return { message: `${version}: seeded a welcome note` };
};

export const tools: Record<string, Tool> = {
  add: async (args) => {
    const { text: note } = decodeArgs(v.object({ text: v.pipe(v.string(), v.minLength(1), v.maxLength(2000)) }), args);
    const { lastInsertRowid } = await db.exec("INSERT INTO notes (text, created_at) VALUES (?, ?)", [note, Date.now()]);
    return outcome([text(`note ${lastInsertRowid} saved`)]);
  },
  list: async () => {
    const notes = await allNotes();
    return outcome([
      text(notes.length === 0 ? "no notes" : notes.map((n) => `${n.pinned ? "📌 " : ""}${n.id}. ${n.text}`).join("\n")),
      json({ notes }),
    ]);
  },
  pin: async (args) => {
    const { id } = decodeArgs(v.object({ id: v.pipe(v.number(), v.integer(), v.minValue(1)) }), args);
    if ((await migrations()) < 2)
      return outcome([text("pinning needs migration 0002: ask the operator to approve notes 1.1.0")]);
    const { changes } = await db.exec("UPDATE notes SET pinned = 1 WHERE id = ?", [id]);
    return outcome([text(changes === 1 ? `note ${id} pinned` : `no note ${id}`)]);
  },
};

export const services: Record<string, Service> = {
  json: async () => ({
    status: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ notes: await allNotes() }),
  }),
  page: async () => {
    const items = (await allNotes())
      .map((n) => `<li>${n.pinned ? "<strong>pinned</strong> " : ""}${escape(n.text)}</li>`)
      .join("");
    const body = `<!doctype html><meta charset="utf-8"><title>Notes</title><h1>Notes</h1><ul>${items || "<li><em>none yet</em></li>"}</ul>`;
    return { status: 200, headers: { "content-type": "text/html; charset=utf-8" }, body };
  },
};
