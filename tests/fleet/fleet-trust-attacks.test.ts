/**
 * Attacks by a database writer on the fleet's trust model (docs/fleet.md#the-trust-model),
 * over a real PostgreSQL server with brokers in this process. Each test states
 * what the trust model promises: each was an attack that worked before it was closed.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Broker } from "../../broker/broker.js";
import { FleetMember, type FleetOptions } from "../../broker/fleet.js";
import { createLogger, type Logger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";
import { provisionOperatorKey } from "../support/operator-key.js";
import { freshDatabase } from "../support/pg-database.js";

const WORKER = join(REPO, "tests/integration/fixtures/bus/worker");
const SLOW = 120_000;
let url: string;
const dirs: string[] = [];
const opened: Array<{ broker: Broker; member: FleetMember }> = [];

interface Host {
  readonly broker: Broker;
  readonly member: FleetMember;
  readonly lines: string[];
  readonly home: string;
}

async function host(name: string, options: Partial<FleetOptions> & { policy?: string } = {}): Promise<Host> {
  const home = mkdtempSync(join(tmpdir(), `tether-attack-${name}-`));
  dirs.push(home);
  const lines: string[] = [];
  const log: Logger = createLogger({
    level: "info",
    sink: (_level, message, fields) => void lines.push(`${message} ${JSON.stringify(fields)}`),
  });
  provisionOperatorKey(home);
  if (options.policy !== undefined) writeFileSync(join(home, "policy.toml"), options.policy);
  const broker = Broker.open({ ...envOptions(), home, log, extensionLogs: false });
  let member: FleetMember;
  try {
    member = await FleetMember.join(broker, { url, host: name, pollMs: 200, ...options });
  } catch (err) {
    await broker.destroy();
    throw err;
  }
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

async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until `h` pulled after the change (a pull that throws still counts as tried). */
async function pulledAfter(h: Host, change: () => Promise<unknown>): Promise<void> {
  const before = h.member.pulls;
  await change();
  await until("the host to pull the change", () => h.member.pulls > before);
  await h.member.pull();
}

const sha256 = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

beforeEach(async () => {
  url = await freshDatabase("tether_fleet_trust_attacks");
});

afterEach(async () => {
  for (const { broker, member } of opened.splice(0)) {
    await member.close();
    await broker.destroy();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Host a installs and approves worker (signed, published); b serves and has called it. */
async function approvedFleet(
  bOptions: Partial<FleetOptions> & { policy?: string } = {},
): Promise<{ a: Host; b: Host }> {
  const a = await host("a", { listen: false });
  const b = await host("b", bOptions);
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

/** Host a revokes worker (signed, published); b applied it and refuses calls. */
async function revokedOnB(a: Host, b: Host): Promise<void> {
  a.broker.registry.revoke("worker", { by: "bob" });
  await a.member.publish();
  await until("host b to apply the revocation", () => b.broker.registry.latestApproval("worker")?.revokedAt !== null);
  expect(await call(b, "s-revoked")).toEqual({ ok: false, code: "not_approved" });
}

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** Other spellings of one signature: Node's base64url decoder skips '=' and the last character's 4 unused bits. */
const RESPELLINGS: ReadonlyArray<{ name: string; respell: (sig: string) => string }> = [
  { name: "'=' appended", respell: (sig) => `${sig}=` },
  {
    name: "the last character's unused low bit flipped",
    respell: (sig) => sig.slice(0, -1) + B64URL[B64URL.indexOf(sig.at(-1)!) ^ 1]!,
  },
];

describe.each(RESPELLINGS)(
  "a revocation a host saw is not undone by respelling the approval's signature ($name)",
  ({ respell }) => {
    test(
      "the serving host keeps the extension revoked",
      async () => {
        const { a, b } = await approvedFleet();
        await revokedOnB(a, b);
        const row = (await sql("SELECT id, signature FROM approvals")).rows[0] as { id: string; signature: string };
        const respelled = respell(row.signature);
        expect(respelled).not.toBe(row.signature);
        expect(
          Buffer.from(respelled.slice(17), "base64url").equals(Buffer.from(row.signature.slice(17), "base64url")),
        ).toBe(true);
        await pulledAfter(b, async () => {
          await sql(
            "UPDATE approvals SET revoked_at = NULL, revoked_by = NULL, revocation_signature = NULL, signature = $1 WHERE id = $2",
            [respelled, row.id],
          );
          await announce();
        });
        // The trust model: a database writer cannot "undo a revocation on a host that saw it".
        expect(await call(b, "s2")).toEqual({ ok: false, code: "not_approved" });
        expect(b.broker.registry.latestApproval("worker")!.revokedAt).not.toBeNull();
      },
      SLOW,
    );
  },
);

test(
  "a revocation a host saw is not undone in two steps: the row deleted (the host keeps it, revoked), then inserted again unrevoked",
  async () => {
    const { a, b } = await approvedFleet();
    await revokedOnB(a, b);
    const row = (await sql("SELECT * FROM approvals")).rows[0] as Record<string, unknown>;
    await pulledAfter(b, async () => {
      await sql("DELETE FROM approvals");
      await announce();
    });
    expect(b.broker.registry.latestApproval("worker")!.revokedBy).toBe("bob");
    await pulledAfter(b, async () => {
      await sql(
        "INSERT INTO approvals (extension, manifest_hash, artifact_hash, grants, approved_by, approved_at, withheld_net, signature) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        [
          row.extension,
          row.manifest_hash,
          row.artifact_hash,
          row.grants,
          row.approved_by,
          row.approved_at,
          row.withheld_net,
          row.signature,
        ],
      );
      await announce();
    });
    expect(await call(b, "s2")).toEqual({ ok: false, code: "not_approved" });
  },
  SLOW,
);

const fetchAnswer = async (h: Host, session: string): Promise<string> => {
  try {
    const outcome = await h.broker.callTool("worker", "fetch", JSON.stringify({ url: "https://flagged.example/" }), {
      session,
    });
    return JSON.stringify(outcome);
  } catch (err) {
    return `threw ${(err as { code?: string }).code ?? (err as Error).message}`;
  }
};

test(
  "a narrowing re-approval (--only) a host saw is not undone by deleting it and un-revoking the older, wider one with its signature respelled",
  async () => {
    const { a, b } = await approvedFleet();
    const wide = b.broker.registry.latestApproval("worker")!;
    expect(wide.grants.net).toHaveLength(3);
    a.broker.registry.approve("worker", { by: "alice", onlyNet: ["https://fine.example"] });
    await a.member.publish();
    await until(
      "host b to apply the narrower approval",
      () => b.broker.registry.latestApproval("worker")?.grants.net.length === 1,
    );
    const narrowFetch = await fetchAnswer(b, "s-narrow");
    const old = (await sql("SELECT id, signature FROM approvals WHERE id = (SELECT min(id) FROM approvals)"))
      .rows[0] as { id: string; signature: string };
    await pulledAfter(b, async () => {
      await sql("DELETE FROM approvals WHERE id <> $1", [old.id]);
      await sql(
        "UPDATE approvals SET revoked_at = NULL, revoked_by = NULL, revocation_signature = NULL, signature = $1 WHERE id = $2",
        [`${old.signature}=`, old.id],
      );
      await announce();
    });
    // The trust model: a writer cannot "move an old approval ahead of a newer one" on a host that saw the newer one.
    // The newer approval's row is gone, so the host holds it revoked: it fails closed, never wider.
    expect(narrowFetch).toContain("no approved rule of 'worker' allows GET https://flagged.example/");
    const inForce = b.broker.registry.latestApproval("worker");
    const wideFetch = await fetchAnswer(b, "s-wide");
    expect({
      net: inForce !== null && inForce.revokedAt === null ? inForce.grants.net : "not in force",
      fetch: wideFetch,
    }).toEqual({ net: "not in force", fetch: "threw not_approved" });
    expect(inForce!.grants.net).toEqual(["https://fine.example"]);
  },
  SLOW,
);

/** A new install row, and an artifacts record for it whose `sources` is not JSON. */
const poisonedRecord = async () => {
  await sql(
    "INSERT INTO installs (name, version, description, manifest_text, manifest_hash, artifact_path, artifact_hash, source_dir, installed_at, updated_at) VALUES ('junk', '1', '', 'x', $1, '/x', 'deadbeef', '/x', 1, 1)",
    [sha256("x")],
  );
  await sql(
    "INSERT INTO artifacts (extension, artifact_hash, bytes, sources, source_dir, created_at) VALUES ('junk', 'deadbeef', 1, '{', '/x', 1)",
  );
};

test(
  "one artifacts row whose sources are not JSON leaves that install out: a signed revocation made afterwards is applied on a serving host, and a fresh host joins",
  async () => {
    const { a, b } = await approvedFleet({ policy: "[fleet]\nmax_staleness_ms = 1000\n" });
    await poisonedRecord();
    await announce();
    await new Promise((r) => setTimeout(r, 1000));
    // The operator revokes worker; the revocation reaches the fleet's row (a's own pull after publishing throws).
    a.broker.registry.revoke("worker", { by: "bob" });
    const published = await a.member.publish().then(
      () => "published",
      (err: Error) => `publish rejected: ${err.message}`,
    );
    expect((await sql("SELECT revoked_by FROM approvals")).rows[0]!.revoked_by).toBe("bob");
    await new Promise((r) => setTimeout(r, 2500));
    const pullError = await b.member.pull().then(
      () => "pulled",
      (err: Error) => err.message,
    );
    const served = await call(b, "s2");
    const fresh = await host("c").then(
      () => "joined",
      (err: Error) => `join failed: ${err.message}`,
    );
    // Past the bound the host must not serve an approval that may have been revoked; the revoked worker must not run.
    expect({ published, pullError, served, fresh }).toEqual({
      published: "published",
      pullError: "pulled",
      served: { ok: false, code: "not_approved" },
      fresh: "joined",
    });
  },
  SLOW,
);

test(
  "an install row whose manifest text (hashing to its manifest_hash) is not a manifest is left out: a fresh host joins, a serving host's registry.list() answers",
  async () => {
    const { b } = await approvedFleet();
    const text = "this is [[ not toml";
    await pulledAfter(b, async () => {
      await sql(
        "INSERT INTO installs (name, version, description, manifest_text, manifest_hash, artifact_path, artifact_hash, source_dir, installed_at, updated_at) VALUES ('junk', '1', '', $1, $2, '/x', 'deadbeef', '/x', 1, 1)",
        [text, sha256(text)],
      );
      await announce();
    });
    const listed = (() => {
      try {
        return `listed ${b.broker.registry.list().length}`;
      } catch (err) {
        return `list threw: ${(err as Error).message}`;
      }
    })();
    const fresh = await host("c").then(
      () => "joined",
      (err: Error) => `join failed: ${err.message}`,
    );
    expect({ listed, fresh }).toEqual({ listed: "listed 1", fresh: "joined" });
  },
  SLOW,
);

test(
  "artifact_path and source_dir altered: the host uses its own path, the artifact it wrote",
  async () => {
    const { b } = await approvedFleet();
    await pulledAfter(b, async () => {
      await sql(
        "UPDATE installs SET artifact_path = '/tmp/rogue.js', source_dir = '/tmp/rogue', updated_at = updated_at + 1 WHERE name = 'worker'",
      );
      await announce();
    });
    expect(b.broker.registry.get("worker")!.artifactPath.startsWith(join(b.home, "artifacts"))).toBe(true);
    expect(await call(b, "s2")).toEqual({ ok: true });
    const c = await host("c");
    expect(c.broker.registry.get("worker")!.artifactPath.startsWith(join(c.home, "artifacts"))).toBe(true);
  },
  SLOW,
);

test(
  "a second install row under another name pinning worker's manifest and artifact: not served, no bytes written",
  async () => {
    const { b } = await approvedFleet();
    await pulledAfter(b, async () => {
      await sql(
        "INSERT INTO installs (name, version, description, manifest_text, manifest_hash, artifact_path, artifact_hash, source_dir, installed_at, updated_at) SELECT 'worker2', version, description, manifest_text, manifest_hash, artifact_path, artifact_hash, source_dir, installed_at, updated_at FROM installs WHERE name = 'worker'",
      );
      await sql(
        "INSERT INTO artifact_blobs (extension, artifact_hash, content) SELECT 'worker2', artifact_hash, content FROM artifact_blobs WHERE extension = 'worker'",
      );
      await announce();
    });
    await expect(
      b.broker.callTool("worker2", "run", JSON.stringify({ text: "hi" }), { session: "s2" }).then(
        (o) => (o.ok ? "ok" : o.error.code),
        (e: { code?: string }) => e.code,
      ),
    ).resolves.not.toBe("ok");
    const c = await host("c");
    expect(readdirSync(join(c.home, "artifacts")).filter((f) => f.startsWith("worker2-"))).toEqual([]);
  },
  SLOW,
);

test(
  "the signed approval's id moved above a newer approval: the newer one stays in force (by signed time)",
  async () => {
    const { a, b } = await approvedFleet();
    a.broker.registry.approve("worker", { by: "alice", onlyNet: ["https://fine.example"] });
    await a.member.publish();
    await until(
      "host b to apply the narrower approval",
      () => b.broker.registry.latestApproval("worker")?.grants.net.length === 1,
    );
    await pulledAfter(b, async () => {
      await sql(
        "UPDATE approvals SET id = 1000, revoked_at = NULL, revoked_by = NULL WHERE id = (SELECT min(id) FROM approvals)",
      );
      await announce();
    });
    const latest = b.broker.registry.latestApproval("worker")!;
    expect(latest.revokedAt !== null || latest.grants.net.length === 1).toBe(true);
    const c = await host("c");
    const latestC = c.broker.registry.latestApproval("worker")!;
    expect(latestC.revokedAt !== null || latestC.grants.net.length === 1).toBe(true);
  },
  SLOW,
);

test(
  "the revocation cleared (same spelling) on a serving host stays revoked; NULL and huge values in signed columns are refused, not crashing",
  async () => {
    const { a, b } = await approvedFleet();
    await revokedOnB(a, b);
    await pulledAfter(b, async () => {
      await sql("UPDATE approvals SET revoked_at = NULL, revoked_by = NULL, revocation_signature = NULL");
      await announce();
    });
    expect(await call(b, "s2")).toEqual({ ok: false, code: "not_approved" });
    await pulledAfter(b, async () => {
      await sql(
        "INSERT INTO approvals (extension, manifest_hash, artifact_hash, grants, approved_by, approved_at, withheld_net, signature) SELECT extension, manifest_hash, artifact_hash, repeat('x', 5000000), approved_by, approved_at + 5, withheld_net, repeat('a', 16) || ':' || repeat('A', 5000) FROM approvals",
      );
      await announce();
    });
    expect(await call(b, "s3")).toEqual({ ok: false, code: "not_approved" });
    expect(b.member.refused.length).toBeGreaterThan(0);
  },
  SLOW,
);
