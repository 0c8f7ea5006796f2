/**
 * The fleet's shared store on a real PostgreSQL server (the fleet project's
 * throwaway server; docs/fleet.md): the PostgreSQL schema's migrations apply
 * at open, once even when several brokers open a new database at the same
 * moment; `tether doctor --store` reports the server, the migrations and
 * clock skew, records this host, fails on hosts whose clocks are apart, and
 * never shows the password.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openPgStore, pgMigrationsFolder } from "../../broker/store/pg/open.js";
import { checkPgStore, MAX_SKEW_MS } from "../../broker/store/pg/store-check.js";
import { REPO } from "../support/satellites.js";

const serverUrl = process.env.TETHER_TEST_POSTGRES_URL ?? "";
let url: string;

/** A fresh database on the shared server, for this file alone. */
async function freshDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

const shipped = (): number =>
  (JSON.parse(readFileSync(join(pgMigrationsFolder(), "meta/_journal.json"), "utf8")) as { entries: unknown[] }).entries
    .length;

beforeAll(async () => {
  if (serverUrl === "")
    throw new Error(
      "TETHER_TEST_POSTGRES_URL is not set: run the fleet project (make test, or jest --selectProjects fleet)",
    );
  url = await freshDatabase("tether_shared_store");
});

test("three brokers opening a new database at once apply each migration once, and every table is there", async () => {
  const stores = await Promise.all([openPgStore(url), openPgStore(url), openPgStore(url)]);
  try {
    const pool = stores[0]!.pool;
    const applied = await pool.query<{ n: string }>("SELECT count(*) AS n FROM drizzle.__drizzle_migrations");
    expect(Number(applied.rows[0]!.n)).toBe(shipped());
    const tables = await pool.query<{ t: string }>(
      "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    expect(tables.rows.map((r) => r.t)).toEqual(
      expect.arrayContaining([
        "approvals",
        "installs",
        "invocations",
        "cap_audit",
        "kv",
        "sessions",
        "hook_traces",
        "hosts",
      ]),
    );
    // Defaults in ms, as the SQLite store writes them.
    await pool.query(
      "INSERT INTO installs (name, version, description, manifest_text, manifest_hash, artifact_path, artifact_hash, source_dir) VALUES ('x', '1.0.0', '', '', 'm', '/a', 'h', '/s')",
    );
    const at = Number(
      (await pool.query<{ t: string }>("SELECT installed_at AS t FROM installs WHERE name = 'x'")).rows[0]!.t,
    );
    expect(Math.abs(at - Date.now())).toBeLessThan(60_000);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
});

test("the store check names the server and the migrations, records this host, and fails when two hosts' clocks are apart", async () => {
  const first = await checkPgStore(url, "host-a", "0.0.0-test");
  expect(first).toMatchObject({ ok: true, migrations: shipped() });
  expect(first.detail).toMatch(/^postgres:\/\/tether@127\.0\.0\.1:\d+\/tether_shared_store: PostgreSQL \d+/);
  expect(first.detail).toContain(`${shipped()} of ${shipped()} migrations applied, this host (host-a)`);
  // Another host that wrote with its clock 5 s off.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("INSERT INTO hosts (name, clock_skew_ms, version) VALUES ('host-b', $1, 'x')", [
      first.skewMs! + 5000,
    ]);
  } finally {
    await client.end();
  }
  const second = await checkPgStore(url, "host-a", "0.0.0-test");
  expect(second.ok).toBe(false);
  expect(second.fleetSkewMs).toBeGreaterThan(MAX_SKEW_MS);
  expect(second.detail).toContain("2 host(s) within");
  expect(second.detail).toContain("ms apart: run NTP on every host");
});

test("a wrong password is a failed check that says what to check, and never shows a password", async () => {
  const u = new URL(url);
  u.password = "not-the-password";
  const r = await checkPgStore(u.toString(), "host-a", "0.0.0-test");
  expect(r.ok).toBe(false);
  expect(r.detail).toMatch(/cannot open it: .*password authentication failed/);
  expect(r.detail).toContain("(check the URL, that the server runs, and the role's rights: docs/fleet.md#roles)");
  expect(r.detail).not.toContain("not-the-password");
  expect(r.detail).not.toContain(new URL(serverUrl).password);
});

test("tether doctor --store adds the shared store's line", async () => {
  const home = mkdtempSync(join(tmpdir(), "tether-doctor-store-"));
  const out = await new Promise<string>((resolve) => {
    execFile(
      process.execPath,
      [join(REPO, "bin/tether.js"), "doctor", "--store", url, "--json"],
      { env: { ...process.env, TETHER_HOME: home } },
      (_err, stdout) => resolve(stdout),
    );
  });
  const checks = JSON.parse(out) as Array<{ name: string; ok: boolean; detail: string }>;
  const store = checks.find((c) => c.name === "store (fleet)");
  expect(store?.detail).toContain(`${shipped()} of ${shipped()} migrations applied`);
  expect(out).not.toContain(new URL(serverUrl).password);
  rmSync(home, { recursive: true, force: true });
}, 60_000);
