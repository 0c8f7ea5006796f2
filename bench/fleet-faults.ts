/**
 * What a fleet does under faults (docs/fleet.md#faults-measured): brokers in
 * this process, each with a home of its own, on one real PostgreSQL server
 * started for the bench; host b reaches it through a proxy the bench cuts.
 *
 * - time to refuse after a partition: b cut off, called every 5 ms, until its
 *   first `fleet_stale` (policy bound 1000 ms);
 * - time to serve again once the store is reachable;
 * - calls b served after a revocation published while it was cut off;
 * - takeover of a dead host's session: the lease running out (3000 ms) against
 *   `tether session release --host` (the library's `releaseHost`);
 * - under load (4 callers on b): the server stopped for 3 s and started again,
 *   then every backend terminated — calls answered and refused, time until b
 *   serves again, and b's ledger rows lost or duplicated in `fleet_invocations`.
 *
 *   npx tsx bench/fleet-faults.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import pg from "pg";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../broker/broker.js";
import { FleetMember } from "../broker/fleet.js";
import { createLogger } from "../broker/base/log.js";
import { readEnvironment } from "../broker/cli/environment.js";
import { startPostgres } from "../tests/support/postgres-server.js";
import { provisionOperatorKey } from "../tests/support/operator-key.js";
import { CutProxy } from "../tests/support/cut-proxy.js";
import { ECHO_DIR } from "./lib/home.js";
import { median, quantile, table } from "./lib/stats.js";

const ROUNDS = 5;
const BOUND_MS = 1000;
const LEASE_MS = 3000;
const ms = (x: number): string => String(Math.round(x));
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));
const homes: string[] = [];

function open(name: string, policy = ""): Broker {
  const home = provisionOperatorKey(mkdtempSync(join(tmpdir(), `tether-bench-faults-${name}-`)));
  homes.push(home);
  writeFileSync(join(home, "policy.toml"), policy);
  const { home: _home, ...env } = readEnvironment(process.env);
  return Broker.open({ ...env, home, log: createLogger({ level: "error" }), extensionLogs: false });
}

async function main(): Promise<void> {
  const server = await startPostgres();
  const target = new URL(server.url);
  const proxy = await CutProxy.start({ host: target.hostname, port: Number(target.port) });
  const a = open("a");
  const b = open("b", `[fleet]\nmax_staleness_ms = ${BOUND_MS}\n`);
  const ma = await FleetMember.join(a, { url: server.url, host: "a", listen: false, leaseMs: LEASE_MS });
  const mb = await FleetMember.join(b, { url: proxy.through(server.url), host: "b", leaseMs: LEASE_MS });
  const c = open("c");
  const mc = await FleetMember.join(c, { url: server.url, host: "c", leaseMs: LEASE_MS });
  try {
    await a.registry.install(ECHO_DIR);
    const name = a.registry.list()[0]!.name;
    const tool = a.registry.get(name)!.manifest.tool[0]!.name;
    const call = async (broker: Broker, session = "s"): Promise<string> => {
      try {
        const r = await broker.callTool(name, tool, JSON.stringify({ text: "x" }), { session });
        return r.ok ? "ok" : r.error.code;
      } catch (err) {
        return (err as { code?: string }).code ?? "threw";
      }
    };
    const refuse: number[] = [];
    const recover: number[] = [];
    const servedAfterRevoke: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      a.registry.approve(name);
      await ma.publish();
      while ((await call(b)) !== "ok") await sleep(5);
      proxy.cut();
      const cutAt = performance.now();
      // Revoked on a while b cannot hear: count what b still serves of it.
      a.registry.revoke(name);
      await ma.publish();
      let served = 0;
      for (;;) {
        const answer = await call(b);
        if (answer === "ok") served++;
        if (answer === "fleet_stale") break;
        await sleep(5);
      }
      refuse.push(performance.now() - cutAt);
      servedAfterRevoke.push(served);
      proxy.restore();
      const backAt = performance.now();
      while ((await call(b)) === "fleet_stale") await sleep(5);
      recover.push(performance.now() - backAt);
    }
    a.registry.approve(name);
    await ma.publish();
    // Takeover: host b holds a session; its heartbeats stop (cut off); c opens the session.
    const takeover = async (release: boolean): Promise<number> => {
      const id = `t-${release}-${Math.random().toString(36).slice(2)}`;
      await mb.openSession(id);
      proxy.cut();
      const t0 = performance.now();
      if (release) await mc.releaseHost("b");
      for (;;) {
        try {
          await mc.openSession(id);
          break;
        } catch {
          await sleep(20);
        }
      }
      const took = performance.now() - t0;
      await mc.closeSession(id);
      proxy.restore();
      await sleep(BOUND_MS);
      return took;
    };
    const byLease = [await takeover(false), await takeover(false)];
    const byRelease = [await takeover(true), await takeover(true)];

    // Under load: 4 callers on b without pause while the store is stopped and started, then while every backend is terminated.
    const underLoad = async (label: string, fault: () => Promise<void>): Promise<string[]> => {
      const codes = new Map<string, number>();
      let running = true;
      let lastOk = 0;
      const callers = Array.from({ length: 4 }, async (_, i) => {
        while (running) {
          const code = await call(b, `${label}-${i}`);
          codes.set(code, (codes.get(code) ?? 0) + 1);
          if (code === "ok") lastOk = performance.now();
          else await sleep(5);
        }
      });
      await sleep(500);
      await fault();
      const over = performance.now();
      while (lastOk < over) await sleep(5);
      const back = performance.now() - over;
      await sleep(500);
      running = false;
      await Promise.all(callers);
      // Every row b wrote reaches the fleet once: lost = b's rows missing there, duplicated = rows there more than once.
      const admin = new pg.Client({ connectionString: server.url });
      admin.on("error", () => {});
      await admin.connect();
      const local = (
        b.store.sqlite.prepare("SELECT id FROM invocations WHERE session_id LIKE ?").all(`${label}-%`) as Array<{
          id: number;
        }>
      ).map((r) => r.id);
      const shipped = async () =>
        (
          await admin.query<{ id: string }>(
            "SELECT id FROM fleet_invocations WHERE host = 'b' AND session_id LIKE $1 AND outcome <> 'running'",
            [`${label}-%`],
          )
        ).rows.map((r) => Number(r.id));
      for (let waited = 0; waited < 15_000 && (await shipped()).length < local.length; waited += 50) await sleep(50);
      const theirs = await shipped();
      const lost = local.filter((id) => !theirs.includes(id)).length;
      const duplicated = theirs.length - new Set(theirs).size;
      await admin.end();
      const total = [...codes.values()].reduce((x, y) => x + y, 0);
      const refused =
        [...codes]
          .filter(([code]) => code !== "ok")
          .map(([code, n]) => `${code} ${n}`)
          .join(", ") || "none";
      return [label, String(total), refused, ms(back), String(lost), String(duplicated)];
    };
    const loadRows = [
      await underLoad("store stopped 3 s", async () => {
        await server.halt();
        await sleep(3000);
        await server.resume();
      }),
      await underLoad("every backend terminated", async () => {
        const probe = new pg.Client({ connectionString: server.url });
        probe.on("error", () => {});
        await probe.connect();
        await probe.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        await probe.end();
      }),
    ];
    const row = (label: string, xs: number[]) => {
      const s = [...xs].sort((x, y) => x - y);
      return [label, ms(median(s)), ms(quantile(s, 0.99)), ms(s.at(-1)!)];
    };
    console.log(
      `fleet faults (ms unless said; staleness bound ${BOUND_MS} ms, lease ${LEASE_MS} ms, ${ROUNDS} partitions)`,
    );
    console.log(
      table(
        ["fault", "median", "p99", "max"],
        [
          row("partition → first fleet_stale", refuse),
          row("store back → served again", recover),
          row("calls served after a revocation made during the partition (count)", servedAfterRevoke),
          row("host dies → session opens elsewhere (lease runs out)", byLease),
          row("host dies → session opens elsewhere (session release --host)", byRelease),
        ],
      ),
    );
    console.log(`\nfaults under load on host b (4 callers, no pause; staleness bound ${BOUND_MS} ms)`);
    console.log(
      table(
        ["fault", "calls", "refused (code count)", "fault over → served (ms)", "rows lost", "rows duplicated"],
        loadRows,
      ),
    );
  } finally {
    await mc.close();
    await mb.close();
    await ma.close();
    await Promise.all([a.close(), b.close(), c.close()]);
    await proxy.close();
    await server.stop();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  }
}

await main();
