/**
 * The console on a host of a fleet (a real PostgreSQL server, brokers in this
 * process): an approval, a revocation and an uninstall made on one host's
 * console pages are published to the fleet as the commands publish theirs, so
 * another host sees each — with who made it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Broker } from "../../broker/broker.js";
import { FleetMember } from "../../broker/fleet.js";
import { silentLogger } from "../../broker/base/log.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";
import { ConsoleClient, TOKEN } from "../integration/support/console-client.js";
import { provisionOperatorKey } from "../support/operator-key.js";

const serverUrl = process.env.TETHER_TEST_POSTGRES_URL ?? "";
const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
const homes: string[] = [];
const opened: Array<{ broker: Broker; member: FleetMember }> = [];
let url: string;
let server: ServeServer | null = null;

async function host(name: string): Promise<{ broker: Broker; member: FleetMember }> {
  const home = mkdtempSync(join(tmpdir(), `tether-console-fleet-${name}-`));
  homes.push(home);
  provisionOperatorKey(home);
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger, extensionLogs: false });
  const member = await FleetMember.join(broker, { url, host: name, pollMs: 200 });
  opened.push({ broker, member });
  return { broker, member };
}

beforeAll(async () => {
  if (serverUrl === "")
    throw new Error(
      "TETHER_TEST_POSTGRES_URL is not set: run the fleet project (make test, or jest --selectProjects fleet)",
    );
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query("DROP DATABASE IF EXISTS tether_console_fleet WITH (FORCE)");
    await admin.query("CREATE DATABASE tether_console_fleet");
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = "/tether_console_fleet";
  url = u.toString();
});

afterAll(async () => {
  await server?.shutdown(Promise.resolve());
  for (const { broker, member } of opened.splice(0)) {
    await member.close();
    await broker.destroy();
  }
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

test("approve, revoke and uninstall on one host's console reach the other host, recorded as made by the name signed in as", async () => {
  const a = await host("a");
  const b = await host("b");
  await a.broker.registry.install(WORKER);
  expect(await a.member.publish()).toBe(true);
  await until("host b to see the install", () => b.broker.registry.get("worker") !== null);

  server = new ServeServer({ broker: a.broker, token: TOKEN, log: silentLogger, say: () => {} });
  const { url: ws } = await server.listen({ port: 0 });
  const client = new ConsoleClient(ws.replace(/^ws:/, "http:"));
  await client.login(TOKEN, "alice");

  const rules = a.broker.registry.require("worker").manifest.net.allow;
  expect((await client.post("/console/ext/worker/approve", { confirm: "yes", rule: [...rules] })).status).toBe(303);
  expect((await client.get("/console/ext/worker")).text).toContain("; published to the fleet");
  await until(
    "host b to see the approval",
    () => b.broker.registry.status(b.broker.registry.get("worker")!) === "approved",
  );
  expect(b.broker.registry.latestApproval("worker")).toMatchObject({ approvedBy: "alice", revokedBy: null });

  expect((await client.post("/console/ext/worker/revoke", { confirm: "yes" })).status).toBe(303);
  await until(
    "host b to see the revocation",
    () => b.broker.registry.status(b.broker.registry.get("worker")!) === "revoked",
  );
  expect(b.broker.registry.latestApproval("worker")).toMatchObject({ revokedBy: "alice" });

  expect((await client.post("/console/ext/worker/uninstall", { confirm: "yes" })).status).toBe(303);
  await until("host b to see the uninstall", () => b.broker.registry.get("worker") === null);
});

test("an approval a database writer inserted is refused on the console's host, and every console page says so", async () => {
  const a = await host("c1");
  await a.broker.registry.install(WORKER);
  await a.member.publish();
  const before = a.member.pulls;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(
      "INSERT INTO approvals (extension, manifest_hash, artifact_hash, grants, approved_by) SELECT name, manifest_hash, artifact_hash, '{}', 'mallory' FROM installs WHERE name = 'worker'",
    );
    await admin.query(
      "UPDATE fleet_versions SET version = version + 1 WHERE name = 'registry'; SELECT pg_notify('tether_registry', '')",
    );
  } finally {
    await admin.end();
  }
  await until("the host to pull", () => a.member.pulls > before && a.member.refused.length > 0);
  const console2 = new ServeServer({ broker: a.broker, token: TOKEN, log: silentLogger, say: () => {} });
  const { url: ws } = await console2.listen({ port: 0 });
  try {
    const client = new ConsoleClient(ws.replace(/^ws:/, "http:"));
    await client.login(TOKEN, "alice");
    for (const path of ["/console/", "/console/ext/worker", "/console/audit"]) {
      const got = await client.get(path);
      expect([path, got.text]).toEqual([
        path,
        expect.stringMatching(
          /<ul id="alerts" role="alert"><li class="problem">Refused the fleet's approval #\d+ of 'worker': it carries no operator's signature; it is not served here<\/li><\/ul>/,
        ),
      ]);
    }
    expect(a.broker.registry.status(a.broker.registry.get("worker")!)).toBe("pending");
  } finally {
    await console2.shutdown(Promise.resolve());
  }
});
