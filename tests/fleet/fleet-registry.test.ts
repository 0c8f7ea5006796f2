/**
 * The fleet's registry over a real PostgreSQL server, with brokers in this
 * process (each its own home, real jailed satellites): an approval made on one
 * host lets another call; a revocation published on one host stops another's
 * running satellites and its next call is refused; a host that lacks an
 * artifact writes it from the fleet's bytes, and refuses bytes that do not
 * hash to the approved artifact; approvals and revocations made on two hosts
 * at once, with calls in flight, leave one documented answer per call and every copy
 * equal to the fleet's, with at most one approval in force.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Broker } from "../../broker/broker.js";
import { FleetMember } from "../../broker/fleet.js";
import { createLogger, type Logger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";
import { provisionOperatorKey } from "../support/operator-key.js";

const serverUrl = process.env.TETHER_TEST_POSTGRES_URL ?? "";
const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
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

interface Host {
  readonly broker: Broker;
  readonly member: FleetMember;
  readonly warnings: string[];
}

/** A broker with a home of its own, joined to the fleet as `name`. */
async function host(name: string, options: { listen?: boolean } = {}): Promise<Host> {
  const home = mkdtempSync(join(tmpdir(), `tether-fleet-${name}-`));
  homes.push(home);
  const warnings: string[] = [];
  const log: Logger = createLogger({
    level: "warn",
    sink: (_level, message, fields) => void warnings.push(`${message} ${JSON.stringify(fields)}`),
  });
  provisionOperatorKey(home);
  const broker = Broker.open({ ...envOptions(), home, log, extensionLogs: false });
  const member = await FleetMember.join(broker, { url, host: name, pollMs: 200, ...options });
  opened.push({ broker, member });
  return { broker, member, warnings };
}

const call = (h: Host, session = "s1") =>
  h.broker.callTool("worker", "run", JSON.stringify({ text: "hi" }), { session });

beforeAll(async () => {
  if (serverUrl === "")
    throw new Error(
      "TETHER_TEST_POSTGRES_URL is not set: run the fleet project (make test, or jest --selectProjects fleet)",
    );
});

beforeEach(async () => {
  url = await freshDatabase("tether_fleet_registry");
});

afterEach(async () => {
  for (const { broker, member } of opened.splice(0)) {
    await member.close();
    await broker.destroy();
  }
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

test("approved on one host, called on another; revoked on the first, the other's satellite stops and its next call is refused; approved again, it runs again", async () => {
  const a = await host("a", { listen: false });
  const b = await host("b");
  await a.broker.registry.install(WORKER);
  a.broker.registry.approve("worker", { by: "alice" });
  expect(await a.member.publish()).toBe(true);

  // B hears of it and writes the artifact from the fleet's bytes.
  await until(
    "host b to see the approval",
    () =>
      b.broker.registry.get("worker") !== null &&
      b.broker.registry.status(b.broker.registry.get("worker")!) === "approved",
  );
  expect(b.broker.registry.latestApproval("worker")!.approvedBy).toBe("alice");
  const first = await call(b);
  expect(first.ok).toBe(true);
  expect(b.broker.scope("s1").live.has("worker")).toBe(true);

  a.broker.registry.revoke("worker", { by: "bob" });
  await a.member.publish();
  // Pushed, not waited for by a call: the satellite stops on its own.
  await until("host b's satellite to stop", () => !b.broker.scope("s1").live.has("worker"));
  expect(b.warnings.join("\n")).toMatch(/approval revoked/);
  // Who revoked it crosses hosts with the revocation.
  expect(b.broker.registry.latestApproval("worker")!.revokedBy).toBe("bob");
  const refused = await call(b).catch((err: Error & { code?: string }) => ({
    ok: false as const,
    error: { code: err.code, msg: err.message },
  }));
  expect(refused.ok).toBe(false);
  expect(!refused.ok && refused.error.code).toBe("not_approved");

  a.broker.registry.approve("worker", { by: "alice" });
  await a.member.publish();
  await until(
    "host b to see the new approval",
    () => b.broker.registry.status(b.broker.registry.get("worker")!) === "approved",
  );
  expect((await call(b)).ok).toBe(true);
  expect(b.broker.registry.approvalHistory("worker").map((r) => r.revokedBy)).toEqual([null, "bob"]);
});

test("a host runs only the bytes the approval names: an artifact altered in the fleet's store is not installed there, and the operator is told", async () => {
  const a = await host("a", { listen: false });
  await a.broker.registry.install(WORKER);
  a.broker.registry.approve("worker");
  await a.member.publish();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query("UPDATE artifact_blobs SET content = content || convert_to('\nglobalThis.pwned = 1;', 'UTF8')");
  } finally {
    await admin.end();
  }
  const c = await host("c");
  expect(c.broker.registry.get("worker")).toBeNull();
  expect(c.warnings.join("\n")).toMatch(
    /worker: the fleet's artifact does not hash to [0-9a-f]{16}; not installed on this host/,
  );
  // The host that built it still has its own copy, checked the same way.
  await a.member.pull();
  expect(a.broker.registry.get("worker")).not.toBeNull();
});

test("approve and revoke storms from two hosts with calls in flight: every call answered ok, not_approved or closed, at most one approval in force, every copy equal to the fleet's", async () => {
  const a = await host("a", { listen: false });
  const b = await host("b", { listen: false });
  const c = await host("c");
  await a.broker.registry.install(WORKER);
  a.broker.registry.approve("worker");
  await a.member.publish();
  await b.member.pull();
  await until("host c to see the approval", () => c.broker.registry.latestApproval("worker") !== null);

  const answers: string[] = [];
  let storming = true;
  const caller = (async () => {
    let i = 0;
    while (storming) {
      const outcome = await call(c, `s${i++ % 3}`).catch((err: Error & { code?: string }) => ({
        ok: false as const,
        error: { code: err.code ?? "threw", msg: err.message },
      }));
      answers.push(outcome.ok ? "ok" : (outcome.error.code ?? "?"));
      // A refusal answers without I/O: let the pulls that end it run.
      await new Promise((r) => setImmediate(r));
    }
  })();
  const operator = async (h: Host, rounds: number) => {
    for (let i = 0; i < rounds; i++) {
      await h.member.pull();
      if (i % 2 === 0) h.broker.registry.approve("worker");
      else h.broker.registry.revoke("worker");
      await h.member.publish();
    }
  };
  await Promise.all([operator(a, 12), operator(b, 12)]);
  // One more approval, so the caller's last answers are calls that ran.
  await a.member.pull();
  a.broker.registry.approve("worker");
  await a.member.publish();
  await until(
    "host c to apply the last approval",
    () => c.broker.registry.status(c.broker.registry.get("worker")!) === "approved",
  );
  const settled = answers.length;
  await until("a call after the last approval", () => answers.length > settled + 1);
  storming = false;
  await caller;

  expect(answers.length).toBeGreaterThan(2);
  // A call that reached a satellite the revocation was stopping ends not_approved too (docs/errors.md).
  expect(answers.filter((a) => !["ok", "not_approved"].includes(a))).toEqual([]);
  expect(answers.at(-1)).toBe("ok");
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const open = await admin.query("SELECT id FROM approvals WHERE extension = 'worker' AND revoked_at IS NULL");
    expect(open.rows.length).toBe(1);
    const all = (
      await admin.query<{ id: string; revoked_at: string | null }>("SELECT id, revoked_at FROM approvals ORDER BY id")
    ).rows.map((r) => [Number(r.id), r.revoked_at === null]);
    for (const h of [a, b, c]) {
      await h.member.pull();
      expect(
        h.broker.registry
          .approvalHistory("worker")
          .map((r) => [r.id, r.revokedAt === null])
          .reverse(),
      ).toEqual(all);
    }
  } finally {
    await admin.end();
  }
});

test("an extension with [storage] approved on one host has its migrations applied to another host's database of it, and its review records there", async () => {
  const a = await host("a", { listen: false });
  await a.broker.registry.install(join(REPO, "manifests/notes"));
  a.broker.registry.approve("notes");
  await a.member.publish();
  const b = await host("b");
  const installed = b.broker.registry.get("notes")!;
  expect(b.broker.registry.status(installed)).toBe("approved");
  // Migration 0002 (the pinned column) is there: pin works on host b's own database.
  const added = await b.broker.callTool("notes", "add", JSON.stringify({ text: "from b" }), { session: "s1" });
  expect(added.ok).toBe(true);
  const pinned = await b.broker.callTool("notes", "pin", JSON.stringify({ id: 1 }), { session: "s1" });
  expect(pinned.ok).toBe(true);
  expect(b.broker.registry.migrationPlan(installed).migrations.map((m) => [m.name, m.applied !== null])).toEqual([
    ["0001_notes.sql", true],
    ["0002_pinned.sql", true],
  ]);
  // What it was built from came along: the review's source list on b names the same files as on a.
  const onA = a.broker.registry.artifactRecord("notes", installed.artifactHash)!;
  expect(b.broker.registry.artifactRecord("notes", installed.artifactHash)!.sources).toEqual(onA.sources);
  expect(b.warnings).toEqual([]);
});
