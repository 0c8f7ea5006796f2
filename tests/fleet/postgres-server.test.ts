/**
 * The throwaway PostgreSQL server is a real one: the run's shared server
 * (TETHER_TEST_POSTGRES_URL, from the fleet project's globalSetup) answers over
 * TCP and its Unix socket, and a server of this file's own does SQL, carries
 * LISTEN/NOTIFY between two connections, refuses a wrong password over TCP and
 * is gone once stopped. The client is `psql` until the project has a Node
 * PostgreSQL client.
 */
import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { psql, startPostgres, type PostgresServer } from "../support/postgres-server.js";
import { until } from "../support/wait.js";

describe("the run's shared server", () => {
  const url = process.env.TETHER_TEST_POSTGRES_URL ?? "";
  const socketUrl = process.env.TETHER_TEST_POSTGRES_SOCKET_URL ?? "";
  const shared = { bin: process.env.TETHER_TEST_POSTGRES_BIN ?? "" };

  test("is handed to the test files", () => {
    expect(url).toMatch(/^postgres:\/\/tether:[^@]+@127\.0\.0\.1:\d+\/tether$/);
    expect(socketUrl).toMatch(/^postgres:\/\/tether@\/tether\?host=/);
  });

  test("one database over TCP and over the socket", async () => {
    const table = `shared_smoke_${process.pid}`;
    await psql(shared, url, `CREATE TABLE ${table} (n int); INSERT INTO ${table} VALUES (7)`);
    expect(await psql(shared, socketUrl, `SELECT n FROM ${table}`)).toBe("7");
    await psql(shared, socketUrl, `DROP TABLE ${table}`);
  });
});

describe("a server of its own", () => {
  let server: PostgresServer;

  beforeAll(async () => {
    server = await startPostgres();
  });

  afterAll(() => server.stop());

  test("TCP on 127.0.0.1 and the Unix socket in its dir", async () => {
    expect(await psql(server, server.url, "SELECT host(inet_server_addr()), current_user, current_database()")).toBe(
      "127.0.0.1|tether|tether",
    );
    // Over a Unix socket the server has no address.
    expect(await psql(server, server.socketUrl, "SELECT inet_server_addr() IS NULL, current_database()")).toBe(
      "t|tether",
    );
    expect(existsSync(join(server.dir, `.s.PGSQL.${server.port}`))).toBe(true);
    if (process.getuid?.() === 0) expect(statSync(join(server.dir, "data")).uid).toBe(65534);
  });

  test("throwaway settings: no fsync, room for several brokers, UTF8", async () => {
    expect(
      await psql(
        server,
        server.url,
        "SELECT current_setting('fsync'), current_setting('max_connections'), current_setting('server_encoding')",
      ),
    ).toBe("off|100|UTF8");
  });

  test("a wrong password is refused over TCP", async () => {
    const wrong = server.url.replace(/:[^:@/]+@/, ":wrong@");
    await expect(psql(server, wrong, "SELECT 1")).rejects.toThrow(/password authentication failed/);
  });

  test("creates a table, inserts and selects", async () => {
    await psql(
      server,
      server.url,
      "CREATE TABLE ledger (id serial PRIMARY KEY, who text NOT NULL, at timestamptz DEFAULT now())",
    );
    await psql(server, server.url, "INSERT INTO ledger (who) VALUES ('broker-a'), ('broker-b')");
    expect(await psql(server, server.socketUrl, "SELECT string_agg(who, ',' ORDER BY id) FROM ledger")).toBe(
      "broker-a,broker-b",
    );
  });

  test("LISTEN/NOTIFY between two connections", async () => {
    // The listener: one psql session kept open on stdin; psql prints the notifications it got after each command.
    const listener = spawn(join(server.bin, "psql"), ["-X", "-q", "-A", "-t", "-d", server.socketUrl], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    listener.stdout.on("data", (d: Buffer) => (out += d.toString()));
    listener.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const closed = new Promise((resolve) => listener.on("close", resolve));
    try {
      listener.stdin.write("LISTEN fleet;\nSELECT 'listening as ' || pg_backend_pid();\n");
      await until("the listener's LISTEN", () => /listening as \d+/.test(out));
      const listenerPid = /listening as (\d+)/.exec(out)?.[1];
      // The notifier: another connection (over TCP).
      const notifierPid = await psql(server, server.url, "NOTIFY fleet, 'ledger changed'; SELECT pg_backend_pid()");
      expect(notifierPid).not.toBe(listenerPid);
      // Delivery is asynchronous: poll (a bounded number of commands) until psql has printed it.
      for (let i = 0; i < 50 && !out.includes("Asynchronous notification"); i++) {
        listener.stdin.write(`SELECT 'poll ${i}';\n`);
        await until(`poll ${i}`, () => out.includes(`poll ${i}`));
      }
      expect(out).toContain(
        `Asynchronous notification "fleet" with payload "ledger changed" received from server process with PID ${notifierPid}.`,
      );
    } finally {
      listener.stdin.end();
      await closed;
    }
  });

  test("stop() stops it: the port refuses, the dir is gone", async () => {
    const { port, dir } = server;
    await server.stop();
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    expect(refused).toBe("ECONNREFUSED");
    expect(existsSync(dir)).toBe(false);
    await server.stop(); // idempotent
  });
});
