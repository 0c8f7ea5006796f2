/**
 * The roles of docs/fleet.md#roles, proved on the run's real PostgreSQL
 * server with real `tether` processes. The SQL run here is the SQL of that
 * section, read from the doc (only the names and the passwords are this
 * test's), so the doc and the test cannot drift:
 *
 * - the stricter setup: a superuser creates an administrator that owns the
 *   database and the brokers' role `tether_broker` (no superuser, no
 *   CREATEDB/CREATEROLE, owns nothing); the administrator creates the tables
 *   with `tether doctor --store` and grants the section's rights; then, as
 *   `tether_broker` alone, install and approve on host a, a tool call and a
 *   `kv` put/get through `tether serve` on host b, its ledger shipped, `tether
 *   status` listing both hosts, `tether revoke` on a stopping b's satellite,
 *   `tether doctor --store` passing — and nothing refused on the way;
 * - a right missing (INSERT on `fleet_invocations` and USAGE on a sequence,
 *   USAGE on schema `drizzle`) and a migration the role cannot apply: `tether doctor --store`
 *   and `tether serve` name what to grant and the doc's section, never the
 *   password, never a stack; a right revoked while a host serves is named by
 *   its ledger's shipper, which ships again once it is granted back;
 * - the simple setup: the role owns an empty database, and the first
 *   `tether` command creates the tables, with no administrator's step.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { REPO } from "../support/satellites.js";
import { until } from "../support/wait.js";
import {
  Children,
  connectServe,
  runTether,
  serveRefused,
  startServe,
  type Message,
  type Ran,
  type Served,
} from "../support/fleet-processes.js";

const serverUrl = process.env.TETHER_TEST_POSTGRES_URL ?? "";
const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
const KEEPER = join(REPO, "tests/integration/fixtures/keeper");
const homes: string[] = [];
const children = new Children();

/** The SQL blocks of docs/fleet.md's "Roles" section, in order: the simple setup, the stricter setup's roles, its grants. */
function rolesSql(): string[] {
  const doc = readFileSync(join(REPO, "docs/fleet.md"), "utf8");
  const start = doc.indexOf("\n## Roles\n");
  const end = doc.indexOf("\n## ", start + 1);
  const section = doc.slice(start, end);
  return [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** The doc's SQL with this test's database name for `tether` (and the simple setup's role) and a password per role; one statement per entry. */
function adapt(sql: string, database: string, passwords: Map<string, string>): string[] {
  const text = sql
    .replace(/ROLE (\w+) LOGIN PASSWORD '…'/g, (_all, role: string) => {
      const role2 = role === "tether" ? database : role;
      const password = randomBytes(12).toString("hex");
      passwords.set(role2, password);
      return `ROLE ${role2} LOGIN PASSWORD '${password}'`;
    })
    .replace(/\btether\b/g, database);
  return text
    .split(/;\s*\n/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function urlOf(role: string, password: string, database: string): string {
  const u = new URL(serverUrl);
  u.username = role;
  u.password = password;
  u.pathname = `/${database}`;
  return u.toString();
}

/** As the server's superuser (the run's admin URL), on `database` (default: the server's own). */
async function asSuperuser<T>(fn: (c: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const u = new URL(serverUrl);
  if (database !== undefined) u.pathname = `/${database}`;
  const c = new pg.Client({ connectionString: u.toString() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function asRole<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Drops what an earlier run left: the databases first (roles owning or granted on them go with them). */
async function dropAll(databases: readonly string[], roles: readonly string[]): Promise<void> {
  await asSuperuser(async (c) => {
    for (const d of databases) await c.query(`DROP DATABASE IF EXISTS ${d} WITH (FORCE)`);
    for (const r of roles) await c.query(`DROP ROLE IF EXISTS ${r}`);
  });
}

function home(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tether-fleet-roles-${name}-`));
  homes.push(dir);
  return dir;
}

/** Runs `tether <args>` as host `host` of the fleet at `url`. */
const tether = runTether;
const serve = (store: string, host: string, dir: string): Promise<Served> => startServe(children, store, host, dir);
const refusedServe = (store: string, host: string, dir: string): Promise<Ran> =>
  serveRefused(children, store, host, dir);
const connect = connectServe;

/** `tether doctor --store <url>`: its store line. */
async function doctorStore(
  url: string,
  host: string,
  dir: string,
): Promise<{ ok: boolean; line: string; all: string }> {
  const ran = await tether(url, host, dir, "doctor", "--store", url);
  const all = ran.stdout + ran.stderr;
  const line = /^(ok {3}|FAIL )store \(fleet\): .*$/m.exec(all);
  if (line === null) throw new Error(`tether doctor --store printed no store line:\n${all}`);
  return { ok: line[1] === "ok   ", line: line[0], all };
}

/** The JSON a keeper tool answered (its one JSON block). */
function keeperAnswer(ran: Message): Message {
  expect(ran.result.outcome.ok).toBe(true);
  const block = ran.result.outcome.value.content.find((p: Message) => p.type === "json");
  if (block === undefined) throw new Error(`no JSON block in the outcome: ${JSON.stringify(ran.result.outcome)}`);
  return block.json;
}

const STACK = /^\s+at .+\(.*:\d+:\d+\)$/m;

beforeAll(() => {
  if (serverUrl === "")
    throw new Error(
      "TETHER_TEST_POSTGRES_URL is not set: run the fleet project (make test, or jest --selectProjects fleet)",
    );
  expect(rolesSql()).toHaveLength(3);
});

afterAll(async () => {
  await children.stopAll();
  for (const dir of homes) rmSync(dir, { recursive: true, force: true });
});

describe("the stricter setup: an administrator owns the tables, tether_broker has only the data rights of docs/fleet.md#roles", () => {
  const DB = "tether_roles";
  const passwords = new Map<string, string>();
  let adminUrl: string;
  let brokerUrl: string;

  beforeAll(async () => {
    const [, roles, grants] = rolesSql();
    await dropAll([DB], ["tether_broker", "tether_admin"]);
    await asSuperuser(async (c) => {
      for (const statement of adapt(roles!, DB, passwords)) await c.query(statement);
    });
    adminUrl = urlOf("tether_admin", passwords.get("tether_admin")!, DB);
    brokerUrl = urlOf("tether_broker", passwords.get("tether_broker")!, DB);

    // The administrator creates the tables, once, as the doc says.
    const created = await doctorStore(adminUrl, "admin", home("admin"));
    expect(created.line).toMatch(/^ok {3}store \(fleet\): postgres:\/\/tether_admin@.*migrations applied/);
    expect(created.all).not.toContain(passwords.get("tether_admin")!);
    await asRole(adminUrl, async (c) => {
      for (const statement of adapt(grants!, DB, passwords)) await c.query(statement);
    });
  });

  test("tether_broker has exactly the documented rights: no superuser, CREATEDB or CREATEROLE, no CREATE or TEMPORARY, owns nothing", async () => {
    await asSuperuser(async (c) => {
      const role = (
        await c.query(
          "SELECT rolsuper, rolcreatedb, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = 'tether_broker'",
        )
      ).rows[0];
      expect(role).toEqual({ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolcanlogin: true });
      const rights = (
        await c.query(
          `SELECT pg_get_userbyid(d.datdba) AS owner,
                  has_database_privilege('tether_broker', d.oid, 'CONNECT') AS connect,
                  has_database_privilege('tether_broker', d.oid, 'CREATE') AS create_schema,
                  has_database_privilege('tether_broker', d.oid, 'TEMPORARY') AS temporary,
                  has_schema_privilege('tether_broker', 'public', 'USAGE') AS public_usage,
                  has_schema_privilege('tether_broker', 'public', 'CREATE') AS public_create,
                  has_schema_privilege('tether_broker', 'drizzle', 'USAGE') AS drizzle_usage,
                  has_schema_privilege('tether_broker', 'drizzle', 'CREATE') AS drizzle_create,
                  has_table_privilege('tether_broker', 'drizzle.__drizzle_migrations', 'INSERT') AS record_insert,
                  (SELECT count(*)::int FROM pg_class WHERE relowner = 'tether_broker'::regrole) AS owned
             FROM pg_database d WHERE d.datname = current_database()`,
        )
      ).rows[0];
      expect(rights).toEqual({
        owner: "tether_admin",
        connect: true,
        create_schema: false,
        temporary: false,
        public_usage: true,
        public_create: false,
        drizzle_usage: true,
        drizzle_create: false,
        record_insert: false,
        owned: 0,
      });
      // The fleet's tables are the administrator's, every one with the four data rights for the broker.
      const tables = (
        await c.query<{ name: string; owner: string; rights: boolean }>(
          `SELECT c.relname AS name, pg_get_userbyid(c.relowner) AS owner,
                  has_table_privilege('tether_broker', c.oid, 'SELECT,INSERT,UPDATE,DELETE') AND NOT has_table_privilege('tether_broker', c.oid, 'TRUNCATE, REFERENCES, TRIGGER') AS rights
             FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' ORDER BY 1`,
        )
      ).rows;
      expect(tables.length).toBeGreaterThan(10);
      expect(tables.filter((t) => t.owner !== "tether_admin" || !t.rights)).toEqual([]);
    }, DB);
  });

  test("as tether_broker: install and approve on host a, a tool call and kv through tether serve on host b, its ledger shipped, status, revoke reaching b, doctor --store", async () => {
    const a = home("a");
    const b = home("b");
    const password = passwords.get("tether_broker")!;
    for (const dir of [WORKER, KEEPER]) {
      const installed = await tether(brokerUrl, "a", a, "install", dir);
      expect(installed.stderr).toMatch(/published to the fleet as host a/);
      expect(installed.code).toBe(0);
    }
    for (const name of ["worker", "keeper"])
      expect((await tether(brokerUrl, "a", a, "approve", name, "--yes")).code).toBe(0);

    const served = await serve(brokerUrl, "b", b);
    const client = await connect(served);
    try {
      expect((await client.call("session.open", { id: "s1", workspace: b })).result).toBeDefined();
      const ran = await client.call("tool.call", { session: "s1", tool: "run", arguments: { text: "hi" } });
      expect(ran.result.outcome.ok).toBe(true);
      expect(ran.result.extension).toBe("worker");

      // kv is read and written in the fleet's tables, by every call.
      expect(
        keeperAnswer(
          await client.call("tool.call", { session: "s1", tool: "put", arguments: { key: "k", value: { n: 1 } } }),
        ).ok,
      ).toBe(true);
      expect(
        keeperAnswer(await client.call("tool.call", { session: "s1", tool: "get", arguments: { key: "k" } })),
      ).toMatchObject({ ok: true, value: { n: 1 } });
      await asSuperuser(async (c) => {
        expect((await c.query("SELECT key FROM kv WHERE extension = 'keeper'")).rows).toEqual([{ key: "k" }]);
        // The ledger shipper's rows, inserted by tether_broker (its sequences included).
        const shipped = async () =>
          (await c.query("SELECT name, outcome FROM fleet_invocations WHERE host = 'b' ORDER BY id")).rows;
        let rows = await shipped();
        for (let i = 0; i < 3000 && rows.filter((r) => r.outcome !== "running").length < 3; i++) {
          await new Promise((r) => setTimeout(r, 10));
          rows = await shipped();
        }
        expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining(["run", "put", "get"]));
      }, DB);

      const status = await tether(brokerUrl, "a", a, "status");
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/^fleet: postgres:\/\/tether_broker@\S+, 3 hosts$/m);
      expect(status.stdout).toMatch(/^ {2}b +seen \d+ s ago, \S+, clock [+-]\d+ ms; sessions: s1 \(process \d+\)$/m);
      expect(status.stdout).toMatch(/^ {2}a +seen \d+ s ago, \S+, clock [+-]\d+ ms; no sessions$/m);
      expect(status.stdout).not.toContain(password);

      const revoked = await tether(brokerUrl, "a", a, "revoke", "worker");
      expect(revoked.code).toBe(0);
      await until(
        "host b to stop the revoked extension's satellite",
        () => /approval revoked/.test(served.err()),
        30_000,
      );
      const refused = await client.call("tool.call", { session: "s1", tool: "run", arguments: { text: "hi" } });
      expect(refused.result.outcome.error.code).toBe("inactive");

      const doctor = await doctorStore(brokerUrl, "a", a);
      expect(doctor.line).toMatch(/^ok {3}store \(fleet\): postgres:\/\/tether_broker@/);
      expect(doctor.all).not.toContain(password);
      // Nothing on the way needed a right the role lacks.
      expect(served.err()).not.toMatch(/permission denied|lacks/);
    } finally {
      client.close();
    }
    const exited = new Promise((resolve) => served.child.once("exit", resolve));
    served.child.kill("SIGTERM");
    await exited;
    expect(served.err()).not.toMatch(/permission denied|lacks/);
  });

  test("a right revoked while a host serves: its ledger's shipper names the table, the right's doc, and ships again once it is granted", async () => {
    const dir = home("e");
    const served = await serve(brokerUrl, "e", dir);
    const client = await connect(served);
    try {
      expect((await client.call("session.open", { id: "s-e", workspace: dir })).result).toBeDefined();
      await asRole(adminUrl, (c) => c.query("REVOKE INSERT ON fleet_invocations FROM tether_broker"));
      try {
        expect(
          keeperAnswer(await client.call("tool.call", { session: "s-e", tool: "get", arguments: { key: "k" } })).ok,
        ).toBe(true);
        await until(
          "host e's shipper to say why it cannot ship",
          () =>
            /fleet ledger: cannot ship to the fleet store.*permission denied for table fleet_invocations: the store's role lacks a right the fleet needs \(docs\/fleet\.md#roles\)/.test(
              served.err(),
            ),
          30_000,
        );
      } finally {
        await asRole(adminUrl, (c) => c.query("GRANT INSERT ON fleet_invocations TO tether_broker"));
      }
      await until("host e's shipper to ship again", () => /fleet ledger: shipping again/.test(served.err()), 30_000);
      const rows = await asSuperuser(
        async (c) => (await c.query("SELECT name, outcome FROM fleet_invocations WHERE host = 'e'")).rows,
        DB,
      );
      expect(rows).toEqual([{ name: "get", outcome: "ok" }]);
      expect(served.err()).not.toContain(passwords.get("tether_broker")!);
    } finally {
      client.close();
    }
    const exited = new Promise((resolve) => served.child.once("exit", resolve));
    served.child.kill("SIGTERM");
    await exited;
  });

  test("the default privileges give tether_broker the same rights on a table and sequence a later migration creates", async () => {
    await asRole(adminUrl, async (c) => {
      await c.query("CREATE TABLE later_table (id bigserial PRIMARY KEY)");
      try {
        const r = (
          await c.query(
            "SELECT has_table_privilege('tether_broker', 'later_table', 'SELECT,INSERT,UPDATE,DELETE') AS t, has_sequence_privilege('tether_broker', 'later_table_id_seq', 'USAGE') AS s",
          )
        ).rows[0];
        expect(r).toEqual({ t: true, s: true });
      } finally {
        await c.query("DROP TABLE later_table");
      }
    });
  });

  test("a right missing is named, with what to grant and docs/fleet.md#roles: by tether doctor --store and by tether serve", async () => {
    const dir = home("c");
    const password = passwords.get("tether_broker")!;
    await asRole(adminUrl, (c) =>
      c.query(
        "REVOKE INSERT ON fleet_invocations FROM tether_broker; REVOKE USAGE ON SEQUENCE approvals_id_seq FROM tether_broker",
      ),
    );
    try {
      const doctor = await doctorStore(brokerUrl, "c", dir);
      expect(doctor.ok).toBe(false);
      expect(doctor.line).toMatch(
        /^FAIL store \(fleet\): postgres:\/\/tether_broker@\S+: role tether_broker lacks INSERT on table fleet_invocations, USAGE on sequence approvals_id_seq: an administrator grants them \(GRANT INSERT ON TABLE fleet_invocations TO tether_broker; GRANT USAGE ON SEQUENCE approvals_id_seq TO tether_broker; docs\/fleet\.md#roles\)$/,
      );
      for (const out of [doctor.all]) {
        expect(out).not.toContain(password);
        expect(out).not.toMatch(STACK);
      }

      const refused = await refusedServe(brokerUrl, "c", dir);
      expect(refused.code).not.toBe(0);
      expect(refused.stdout).not.toMatch(/listening on/);
      expect(refused.stderr).toContain(
        "tether serve: cannot join the fleet's store: role tether_broker lacks INSERT on table fleet_invocations",
      );
      expect(refused.stderr).toContain("docs/fleet.md#roles");
      expect(refused.stderr + refused.stdout).not.toContain(password);
      expect(refused.stderr).not.toMatch(STACK);

      // Every command given the store: tether install refuses the same way, having changed nothing.
      const install = await tether(brokerUrl, "c", dir, "install", WORKER);
      expect(install.code).not.toBe(0);
      expect(install.stderr).toContain(
        "cannot join the fleet's store: role tether_broker lacks INSERT on table fleet_invocations",
      );
      expect(install.stderr + install.stdout).not.toContain(password);
      expect(install.stderr).not.toMatch(STACK);
    } finally {
      await asRole(adminUrl, (c) =>
        c.query(
          "GRANT INSERT ON fleet_invocations TO tether_broker; GRANT USAGE ON SEQUENCE approvals_id_seq TO tether_broker",
        ),
      );
    }

    await asRole(adminUrl, (c) => c.query("REVOKE USAGE ON SCHEMA drizzle FROM tether_broker"));
    try {
      const doctor = await doctorStore(brokerUrl, "c", dir);
      expect(doctor.ok).toBe(false);
      expect(doctor.line).toContain(
        "cannot read the migrator's record drizzle.__drizzle_migrations (permission denied for schema drizzle)",
      );
      expect(doctor.line).toContain(
        "grant the role USAGE on schema drizzle and SELECT on drizzle.__drizzle_migrations (docs/fleet.md#roles)",
      );
      expect(doctor.all).not.toMatch(STACK);
    } finally {
      await asRole(adminUrl, (c) => c.query("GRANT USAGE ON SCHEMA drizzle TO tether_broker"));
    }
    expect((await doctorStore(brokerUrl, "c", dir)).ok).toBe(true);
  });

  test("a migration the role cannot apply (a newer broker before the administrator's step) is named, not attempted half way", async () => {
    const dir = home("d");
    // The store as an older broker left it: its newest migration not recorded.
    const last = await asRole(
      adminUrl,
      async (c) =>
        (
          await c.query(
            "DELETE FROM drizzle.__drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM drizzle.__drizzle_migrations) RETURNING hash, created_at",
          )
        ).rows[0],
    );
    try {
      const shipped = Number(
        (JSON.parse(readFileSync(join(REPO, "drizzle-pg/meta/_journal.json"), "utf8")) as { entries: unknown[] })
          .entries.length,
      );
      const doctor = await doctorStore(brokerUrl, "d", dir);
      expect(doctor.ok).toBe(false);
      expect(doctor.line).toContain(
        `${shipped - 1} of the ${shipped} migrations this broker ships are applied, and role tether_broker cannot apply the rest (permission denied for database ${DB})`,
      );
      expect(doctor.line).toContain("tether doctor --store (docs/fleet.md#roles)");
      expect(doctor.all).not.toMatch(STACK);
    } finally {
      await asRole(adminUrl, (c) =>
        c.query("INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ($1, $2)", [
          last.hash,
          last.created_at,
        ]),
      );
    }
  });
});

test("the simple setup: the role owns an empty database, and its first tether command creates the tables — no administrator's step", async () => {
  const DB = "tether_simple";
  const [simple] = rolesSql();
  const passwords = new Map<string, string>();
  await dropAll([DB], [DB]);
  await asSuperuser(async (c) => {
    for (const statement of adapt(simple!, DB, passwords)) await c.query(statement);
  });
  const url = urlOf(DB, passwords.get(DB)!, DB);
  const a = home("simple-a");
  const b = home("simple-b");
  expect((await tether(url, "a", a, "install", KEEPER)).code).toBe(0);
  expect((await tether(url, "a", a, "approve", "keeper", "--yes")).code).toBe(0);
  const served = await serve(url, "b", b);
  const client = await connect(served);
  try {
    expect((await client.call("session.open", { id: "s1", workspace: b })).result).toBeDefined();
    expect(
      keeperAnswer(await client.call("tool.call", { session: "s1", tool: "put", arguments: { key: "k", value: 2 } }))
        .ok,
    ).toBe(true);
    expect(
      keeperAnswer(await client.call("tool.call", { session: "s1", tool: "get", arguments: { key: "k" } })),
    ).toMatchObject({ ok: true, value: 2 });
  } finally {
    client.close();
  }
  expect((await doctorStore(url, "a", a)).line).toMatch(/^ok {3}store \(fleet\): /);
  await asSuperuser(async (c) => {
    const owners = (
      await c.query(
        "SELECT DISTINCT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relnamespace IN ('public'::regnamespace, 'drizzle'::regnamespace) AND relkind IN ('r', 'S')",
      )
    ).rows;
    expect(owners).toEqual([{ owner: DB }]);
  }, DB);
  expect(served.err()).not.toMatch(/permission denied|lacks/);
});
