/**
 * What a database writer can do to a fleet, over a real PostgreSQL server with
 * brokers in this process (each its own home, real jailed satellites): every
 * widening a row can make — an approval inserted, signed by an untrusted key,
 * altered after signing in any field the signature covers, pointed at a rogue
 * artifact — is refused on a serving host and a fresh one, named in
 * `member.refused` and the log, and its bytes are written nowhere; a
 * revocation a host saw is not undone by clearing it. And what a partition
 * does: a revocation made while the store is unreachable is kept, never undone
 * by the next pull, and published once it is back; a host that cannot hear
 * the store refuses calls past its bound (`fleet_stale`), logs every outage,
 * and serves again when it hears.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Broker } from "../../broker/broker.js";
import { FleetMember, type FleetOptions } from "../../broker/fleet.js";
import { createLogger, type Logger } from "../../broker/base/log.js";
import { createSigningKey, signingKey } from "../../broker/fleet-trust/operator-keys.js";
import { signApproval } from "../../broker/fleet-trust/signed-approvals.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";
import { provisionOperatorKey } from "../support/operator-key.js";
import { freshDatabase } from "../support/pg-database.js";
import { CutProxy } from "../support/cut-proxy.js";

const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
const SLOW = 120_000;
let url: string;
const dirs: string[] = [];
const opened: Array<{ broker: Broker; member: FleetMember }> = [];
/** Closed after the hosts that reach the store through them. */
const proxies: CutProxy[] = [];

interface Host {
  readonly broker: Broker;
  readonly member: FleetMember;
  readonly lines: string[];
  readonly home: string;
}

async function host(name: string, options: Partial<FleetOptions> & { policy?: string } = {}): Promise<Host> {
  const home = mkdtempSync(join(tmpdir(), `tether-trust-${name}-`));
  dirs.push(home);
  const lines: string[] = [];
  const log: Logger = createLogger({
    level: "info",
    sink: (_level, message, fields) => void lines.push(`${message} ${JSON.stringify(fields)}`),
  });
  provisionOperatorKey(home);
  if (options.policy !== undefined) writeFileSync(join(home, "policy.toml"), options.policy);
  const broker = Broker.open({ ...envOptions(), home, log, extensionLogs: false });
  const member = await FleetMember.join(broker, { url, host: name, pollMs: 200, ...options });
  opened.push({ broker, member });
  return { broker, member, lines, home };
}

type Answer = { ok: true } | { ok: false; code: string };
const call = async (h: Host, session = "s1"): Promise<Answer> => {
  try {
    const outcome = await h.broker.callTool("worker", "run", JSON.stringify({ text: "hi" }), { session });
    return outcome.ok ? { ok: true } : { ok: false, code: outcome.error.code };
  } catch (err) {
    return { ok: false, code: (err as { code?: string }).code ?? "threw" };
  }
};

async function sql(text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    return await admin.query(text, params);
  } finally {
    await admin.end();
  }
}

/** What a database writer does after changing rows: every broker hears of it at once. */
const announce = () =>
  sql(
    "UPDATE fleet_versions SET version = version + 1 WHERE name = 'registry'; SELECT pg_notify('tether_registry', '')",
  );

/** Waits until the async `check` holds (polled every 50 ms), or fails naming `what`. */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until `h` pulled after now. */
async function pulledAfter(h: Host, change: () => Promise<unknown>): Promise<void> {
  const before = h.member.pulls;
  await change();
  await until("the host to pull the change", () => h.member.pulls > before);
  await h.member.pull();
}

beforeEach(async () => {
  url = await freshDatabase("tether_fleet_trust");
});

afterEach(async () => {
  for (const { broker, member } of opened.splice(0)) {
    await member.close();
    await broker.destroy();
  }
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Host a installs and approves worker (signed, published); b serves and has called it. */
async function approvedFleet(): Promise<{ a: Host; b: Host }> {
  const a = await host("a", { listen: false });
  const b = await host("b");
  await a.broker.registry.install(WORKER);
  a.broker.registry.approve("worker", { by: "alice" });
  await a.member.publish();
  await until(
    "host b to see the approval",
    () =>
      b.broker.registry.get("worker") !== null &&
      b.broker.registry.status(b.broker.registry.get("worker")!) === "approved",
  );
  expect(await call(b)).toEqual({ ok: true });
  return { a, b };
}

const mallory = () => {
  const dir = mkdtempSync(join(tmpdir(), "tether-mallory-"));
  dirs.push(dir);
  createSigningKey(dir, "mallory");
  return signingKey(dir)!;
};

interface Tamper {
  readonly name: string;
  /** The SQL a database writer runs; the approval in force is row $1. */
  readonly run: (id: number) => Promise<unknown>;
  /** What the refusal says. */
  readonly why: RegExp;
}

const ROGUE = Buffer.from("export default { tools: { run: () => 'rogue' } };\n");
const ROGUE_HASH = createHash("sha256").update(ROGUE).digest("hex");

/** Every field the signature covers, altered; a row inserted unsigned, or signed by a key no host trusts. */
const TAMPERS: readonly Tamper[] = [
  ...(["grants", "withheld_net", "approved_by", "manifest_hash", "artifact_hash"] as const).map((column) => ({
    name: `${column} altered after signing`,
    run: (id: number) => sql(`UPDATE approvals SET ${column} = ${column} || ' ' WHERE id = $1`, [id]),
    why: /its signature does not match its contents/,
  })),
  {
    name: "approved_at altered after signing",
    run: (id) => sql("UPDATE approvals SET approved_at = approved_at + 1 WHERE id = $1", [id]),
    why: /its signature does not match/,
  },
  {
    name: "a rogue artifact beside it, the install and the approval pointed at it",
    run: async (id) => {
      await sql("INSERT INTO artifact_blobs (extension, artifact_hash, content) VALUES ('worker', $1, $2)", [
        ROGUE_HASH,
        ROGUE,
      ]);
      await sql("UPDATE installs SET artifact_hash = $1 WHERE name = 'worker'", [ROGUE_HASH]);
      await sql("UPDATE approvals SET artifact_hash = $1 WHERE id = $2", [ROGUE_HASH, id]);
    },
    why: /its signature does not match/,
  },
  {
    name: "an approval inserted without a signature (the signed one revoked)",
    run: async (id) => {
      await sql("UPDATE approvals SET revoked_at = approved_at + 1 WHERE id = $1", [id]);
      await sql(
        "INSERT INTO approvals (extension, manifest_hash, artifact_hash, grants, approved_by, approved_at, withheld_net) SELECT extension, manifest_hash, artifact_hash, grants, 'mallory', approved_at + 2, withheld_net FROM approvals WHERE id = $1",
        [id],
      );
    },
    why: /it carries no operator's signature/,
  },
  {
    name: "an approval inserted, signed by a key no host trusts",
    run: async (id) => {
      const row = (await sql("SELECT * FROM approvals WHERE id = $1", [id])).rows[0] as Record<string, string>;
      const facts = {
        extension: row.extension!,
        manifestHash: row.manifest_hash!,
        artifactHash: row.artifact_hash!,
        grants: row.grants!,
        withheldNet: row.withheld_net!,
        approvedBy: "mallory",
        approvedAt: Number(row.approved_at) + 2,
      };
      await sql("UPDATE approvals SET revoked_at = approved_at + 1 WHERE id = $1", [id]);
      await sql(
        "INSERT INTO approvals (extension, manifest_hash, artifact_hash, grants, approved_by, approved_at, withheld_net, signature) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        [
          facts.extension,
          facts.manifestHash,
          facts.artifactHash,
          facts.grants,
          facts.approvedBy,
          facts.approvedAt,
          facts.withheldNet,
          signApproval(mallory(), facts),
        ],
      );
    },
    why: /signed by key [0-9a-f]{16}, which this host does not trust/,
  },
];

describe.each(TAMPERS)("a database writer: $name", (tamper) => {
  test(
    "serves nothing on a serving host or a fresh one, is named in refused and the log, and its bytes are written nowhere",
    async () => {
      const { b } = await approvedFleet();
      const id = Number((await sql("SELECT id FROM approvals WHERE revoked_at IS NULL")).rows[0]!.id);
      await pulledAfter(b, async () => {
        await tamper.run(id);
        await announce();
      });
      expect(await call(b, "s2")).toEqual({ ok: false, code: "not_approved" });
      expect(b.member.refused.map((r) => r.why).join("\n")).toMatch(tamper.why);
      expect(b.lines.join("\n")).toMatch(/refused the fleet's approval #\d+ of 'worker'/);
      b.broker.ledger.flush();
      const audited = b.broker.store.sqlite
        .prepare(
          "select capability, decision, rule from cap_audit where session_id = '@fleet' and extension = 'worker'",
        )
        .all() as Array<{ rule: string }>;
      expect(audited).toEqual([expect.objectContaining({ capability: "fleet.approval", decision: "denied" })]);
      expect(audited[0]!.rule).toMatch(tamper.why);
      // A fresh host neither serves it nor writes its bytes.
      const c = await host("c");
      expect(await call(c)).toEqual({ ok: false, code: expect.stringMatching(/^(not_approved|not_installed)$/) });
      expect(readdirSync(join(c.home, "artifacts")).filter((f) => f.startsWith("worker-"))).toEqual([]);
      expect(c.member.refused.length).toBeGreaterThan(0);
    },
    SLOW,
  );
});

test("a revocation a host saw is not undone by a database writer clearing it", async () => {
  const { a, b } = await approvedFleet();
  a.broker.registry.revoke("worker", { by: "bob" });
  await a.member.publish();
  await until("host b to apply the revocation", () => b.broker.registry.latestApproval("worker")?.revokedAt !== null);
  expect(
    (await sql("SELECT revocation_signature FROM approvals WHERE revoked_at IS NOT NULL")).rows[0]!
      .revocation_signature,
  ).toMatch(/^[0-9a-f]{16}:/);
  await pulledAfter(b, async () => {
    await sql("UPDATE approvals SET revoked_at = NULL, revoked_by = NULL, revocation_signature = NULL");
    await announce();
  });
  expect(await call(b)).toEqual({ ok: false, code: "not_approved" });
  expect(b.broker.registry.latestApproval("worker")!.revokedBy).toBe("bob");
});

test(
  "a revocation made while the store is unreachable is kept, not undone by the next pull, and published when it is back",
  async () => {
    const server = new URL(process.env.TETHER_TEST_POSTGRES_URL!);
    const proxy = await CutProxy.start({ host: server.hostname, port: Number(server.port) });
    proxies.push(proxy);
    {
      const a = await host("a", { listen: false });
      await a.broker.registry.install(WORKER);
      a.broker.registry.approve("worker", { by: "alice" });
      await a.member.publish();
      const direct = url;
      url = proxy.through(direct);
      const b = await host("b", { policy: "[fleet]\nmax_staleness_ms = 60000\n" });
      url = direct;
      expect(await call(b)).toEqual({ ok: true });

      proxy.cut();
      b.broker.registry.revoke("worker", { by: "carol" });
      await expect(b.member.publish()).rejects.toThrow();
      expect(await call(b, "s2")).toEqual({ ok: false, code: "not_approved" });
      proxy.restore();
      // The next pulls keep it revoked here and publish it to the fleet.
      await eventually(
        "the revocation to reach the fleet",
        async () => (await sql("SELECT revoked_by FROM approvals WHERE revoked_at IS NOT NULL")).rows.length === 1,
      );
      expect((await sql("SELECT revoked_by, revocation_signature FROM approvals")).rows[0]).toMatchObject({
        revoked_by: "carol",
        revocation_signature: expect.stringMatching(/^[0-9a-f]{16}:/),
      });
      expect(await call(b, "s3")).toEqual({ ok: false, code: "not_approved" });
      expect(b.member.unpublished).toBe(0);
      await a.member.pull();
      expect(a.broker.registry.latestApproval("worker")!.revokedBy).toBe("carol");
    }
  },
  SLOW,
);

test(
  "a host that cannot hear the store refuses calls past its bound (fleet_stale), logs every outage, and serves again when it hears",
  async () => {
    const server = new URL(process.env.TETHER_TEST_POSTGRES_URL!);
    const proxy = await CutProxy.start({ host: server.hostname, port: Number(server.port) });
    proxies.push(proxy);
    {
      const a = await host("a", { listen: false });
      await a.broker.registry.install(WORKER);
      a.broker.registry.approve("worker");
      await a.member.publish();
      const direct = url;
      url = proxy.through(direct);
      const b = await host("b", { policy: "[fleet]\nmax_staleness_ms = 1000\n" });
      url = direct;
      expect(await call(b)).toEqual({ ok: true });
      for (let outage = 1; outage <= 2; outage++) {
        proxy.cut();
        await eventually("calls to be refused as stale", async () => (await call(b)).ok === false, 20_000);
        expect(await call(b)).toEqual({ ok: false, code: "fleet_stale" });
        proxy.restore();
        await eventually("calls to be served again", async () => (await call(b)).ok, 20_000);
        // Every outage is logged, and every recovery: the lines alternate, one of each per time
        // the host went stale and heard again. A loaded machine can stall the host past its 1 s
        // bound once more around a cut (a real outage by its own clock): a further pair, never
        // a line twice in a row.
        const transitions = b.lines
          .map((l) =>
            l.includes("has not heard the fleet's store")
              ? "stale"
              : l.includes("hears the fleet's store again")
                ? "fresh"
                : null,
          )
          .filter((t) => t !== null);
        expect(transitions.length).toBeGreaterThanOrEqual(2 * outage);
        transitions.forEach((t, i) => expect(t).toBe(i % 2 === 0 ? "stale" : "fresh"));
        // Served again: the last transition was the recovery.
        expect(transitions.length % 2).toBe(0);
      }
    }
  },
  SLOW,
);

test(
  "a manifest text altered beside its hash (more tools, other limits) is not installed on any host",
  async () => {
    const { b } = await approvedFleet();
    await pulledAfter(b, async () => {
      await sql(
        "UPDATE installs SET manifest_text = manifest_text || E'\\n# a writer was here\\n' WHERE name = 'worker'",
      );
      await announce();
    });
    expect(await call(b, "s2")).toEqual({ ok: false, code: "not_installed" });
    expect(b.lines.join("\n")).toMatch(
      /worker: the fleet's manifest text does not hash to [0-9a-f]{16}; not installed on this host/,
    );
    const c = await host("c");
    expect(c.broker.registry.get("worker")).toBeNull();
  },
  SLOW,
);
