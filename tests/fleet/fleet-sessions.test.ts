/**
 * Sessions in a fleet, over the run's real PostgreSQL server with brokers in
 * this process: a session closed on one host and opened on another has its
 * policy, its per-session preferences, its extensions' per-session storage
 * (skv, which lives in the fleet's tables), its folds and its strategy
 * preference there; state that moves while the session is open is shipped
 * without a close.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Broker } from "../../broker/broker.js";
import { FleetMember } from "../../broker/fleet.js";
import { silentLogger } from "../../broker/base/log.js";
import { Session } from "../../broker/sessions/session.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { SessionRecords } from "../../broker/sessions/session-records.js";
import { FoldsRepository } from "../../broker/store/folds-repository.js";
import { envOptions } from "../support/env-options.js";
import { provisionOperatorKey } from "../support/operator-key.js";

const serverUrl = process.env.TETHER_TEST_POSTGRES_URL ?? "";
let url: string;
const homes: string[] = [];
const opened: Array<{ broker: Broker; member: FleetMember }> = [];

async function freshDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

async function host(name: string): Promise<{ broker: Broker; member: FleetMember; workspace: string }> {
  const home = mkdtempSync(join(tmpdir(), `tether-fleet-${name}-`));
  homes.push(home);
  provisionOperatorKey(home);
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger, extensionLogs: false });
  const member = await FleetMember.join(broker, { url, host: name, pollMs: 200 });
  opened.push({ broker, member });
  return { broker, member, workspace: home };
}

beforeAll(async () => {
  if (serverUrl === "")
    throw new Error(
      "TETHER_TEST_POSTGRES_URL is not set: run the fleet project (make test, or jest --selectProjects fleet)",
    );
  url = await freshDatabase("tether_fleet_sessions");
});

afterAll(async () => {
  for (const { broker, member } of opened.splice(0)) {
    await member.close();
    await broker.destroy();
  }
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

test("a session closed on one host reopens on another with its policy, preferences, skv, folds and strategy", async () => {
  const a = await host("a");
  const b = await host("b");
  const onA = await Session.open(a.broker, { id: "travel", workspace: a.workspace, policy: { offline: true } });
  onA.prefer("worker", false);
  await a.member.kv.put(
    { extension: "worker", session: "travel" },
    "cursor",
    { value: Buffer.from('{"at":7}'), encoding: "json" },
    1 << 20,
  );
  const folds = new FoldsRepository(a.broker.store);
  folds.insert("travel", 41, "summary", "compactor", [{ from: 0, to: 9, text: "the first ten messages, folded" }]);
  folds.setPreferredStrategy("travel", "summary");
  await onA.close();

  // As `tether mcp`, `tether call` and `tether session` do: the saved record is pulled first, and its policy kept.
  await b.broker.fleet!.openSession("travel");
  const record = new SessionRecords(b.broker.store).get("travel")!;
  expect(record.policy).toEqual({ offline: true });
  expect(record.workspace).toBe(a.workspace);
  const onB = await Session.open(b.broker, { id: "travel", workspace: b.workspace, policy: record.policy });
  try {
    expect(onB.policy).toEqual({ offline: true });
    expect(new Preferences(b.broker.store).effective("travel", "worker").enabled).toBe(false);
    expect((await b.member.kv.get({ extension: "worker", session: "travel" }, "cursor"))?.value.toString()).toBe(
      '{"at":7}',
    );
    const there = new FoldsRepository(b.broker.store);
    expect(there.list("travel").map((f) => [f.from, f.to, f.text, f.strategy])).toEqual([
      [0, 9, "the first ten messages, folded", "summary"],
    ]);
    expect(there.preferredStrategy("travel")).toBe("summary");
  } finally {
    await onB.close();
  }
});

test("state that moves while a session is open reaches the fleet without a close", async () => {
  const a = await host("a2");
  const session = await Session.open(a.broker, { id: "live", workspace: a.workspace });
  try {
    session.prefer("worker", false);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      let value: boolean | null = null;
      const read = async () => {
        const r = await admin.query<{ enabled: boolean }>(
          "SELECT enabled FROM preferences WHERE scope = 'live' AND extension = 'worker'",
        );
        value = r.rows[0]?.enabled ?? null;
      };
      for (let i = 0; i < 3000 && value !== false; i++) {
        await read();
        if (value !== false) await new Promise((r) => setTimeout(r, 10));
      }
      expect(value).toBe(false);
    } finally {
      await admin.end();
    }
  } finally {
    await session.close();
  }
});
