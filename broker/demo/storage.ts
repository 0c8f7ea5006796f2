/**
 * `make demo`'s storage part: the notes example (manifests/notes) installed
 * first as 1.0.0 with one migration, its migrations at review, approved (the
 * migration runs, then its initializer seeds a note), notes added, the HTTP service answering as JSON and HTML
 * through a real `tether serve` listener on loopback; then the upgrade to
 * 1.1.0: review shows the second migration, approving applies it, the notes
 * are kept and can be pinned. It runs on a broker of its own on the demo's
 * home, as `tether serve` would in its own process.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Broker } from "../broker.js";
import type { InvocationOutcome } from "../base/outcome.js";
import { createLogger } from "../base/log.js";
import { reviewOutput } from "../operator/review.js";
import { initLine } from "../init/init-lines.js";
import { ServeServer } from "../tether-serve/serve-server.js";

const SESSION = "notes-demo";
const TOKEN = "demo-serve-token";

const said = (outcome: InvocationOutcome<"tool">): string =>
  outcome.ok
    ? outcome.value.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join(" | ")
    : `error ${outcome.error.code}: ${outcome.error.msg}`;

/** The review's lines about the database and its migrations. */
function storageLines(broker: Broker, name: string): string {
  const lines = reviewOutput(broker, name, false).text.split("\n");
  const from = lines.findIndex((l) => l.startsWith("Database:"));
  const to = lines.findIndex((l, i) => i > from && l === "");
  return lines
    .slice(from, to === -1 ? undefined : to)
    .map((l) => `    ${l}`)
    .join("\n");
}

/** `open` makes the broker this part runs on (the serve listener closes it at the end, as tether serve does). */
export async function storageDemo(
  open: () => Broker,
  repo: string,
  workDir: string,
  step: (title: string) => void,
): Promise<void> {
  const broker = open();
  // 1.0.0: the same folder with only its first migration.
  const folder = join(workDir, "notes");
  cpSync(join(repo, "manifests", "notes"), folder, { recursive: true });
  rmSync(join(folder, "migrations", "0002_pinned.sql"));
  const manifest = join(folder, "manifest.toml");
  const text = readFileSync(manifest, "utf8");
  writeFileSync(manifest, text.replace('version = "1.1.0"', 'version = "1.0.0"'));

  step("An extension with its own database: its migrations shown at review, run when approved");
  const first = await broker.registry.install(folder);
  console.log(`  installed ${first.installed.name} ${first.installed.version}: ${first.status}`);
  console.log(storageLines(broker, "notes"));
  broker.registry.approve("notes", { by: "demo", progress: (line) => console.log(`  … ${line}`) });
  console.log("  approved notes 1.0.0");
  console.log(`  ${initLine("notes", await broker.initialize("notes"))}`);
  for (const note of ["buy milk", "ship the release notes"]) {
    console.log(
      `  add "${note}" ` +
        `→ ${said(await broker.callTool("notes", "add", JSON.stringify({ text: note }), { session: SESSION }))}`,
    );
  }
  console.log(
    `  pin 2 → ${said(await broker.callTool("notes", "pin", JSON.stringify({ id: 2 }), { session: SESSION }))}`,
  );

  step("Its HTTP service under tether serve: /ext/notes/… as JSON and as a page (the serve token as a Bearer header)");
  const server = new ServeServer({ broker, token: TOKEN, log: createLogger({ level: "error" }), say: () => {} });
  const listening = await server.listen({ port: 0 });
  const base = `${listening.pages}/ext/notes`;
  try {
    const get = async (path: string, token: string | null = TOKEN): Promise<string> => {
      const res = await fetch(
        `${base}${path}`,
        token === null ? {} : { headers: { authorization: `Bearer ${token}` } },
      );
      return `${res.status} ${res.headers.get("content-type") ?? ""}: ${(await res.text()).slice(0, 240)}`;
    };
    console.log(`  GET ${base}/notes.json\n    → ${await get("/notes.json")}`);
    console.log(`  GET ${base}/\n    → ${await get("/")}`);
    console.log(`  GET ${base}/notes.json without the token\n    → ${(await get("/notes.json", null)) || "401"}`);

    step("The upgrade to 1.1.0 ships migration 0002: review shows it, approving applies it, the notes are kept");
    writeFileSync(manifest, text);
    cpSync(
      join(repo, "manifests", "notes", "migrations", "0002_pinned.sql"),
      join(folder, "migrations", "0002_pinned.sql"),
    );
    const second = await broker.registry.install(folder);
    console.log(`  installed notes ${second.installed.version}: ${second.status}`);
    console.log(storageLines(broker, "notes"));
    broker.registry.approve("notes", { by: "demo", progress: (line) => console.log(`  … ${line}`) });
    console.log("  approved notes 1.1.0");
    console.log(`  ${initLine("notes", await broker.initialize("notes"))}`);
    console.log(
      `  pin 2 → ${said(await broker.callTool("notes", "pin", JSON.stringify({ id: 2 }), { session: SESSION }))}`,
    );
    console.log(
      `  list → ${said(await broker.callTool("notes", "list", "{}", { session: SESSION })).replace(/\n/g, " / ")}`,
    );
    console.log(`  GET ${base}/notes.json\n    → ${await get("/notes.json")}`);
  } finally {
    await server.shutdown(Promise.resolve());
  }
}
