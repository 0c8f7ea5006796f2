/**
 * `make bench` (boot): what reusing Deno's caches per approved artifact saves
 * on a cold boot. Two brokers on two homes, one with the cache and one
 * without, boot the echo extension in a fresh session each, interleaved; each
 * sample is a boot plus one tiny call (the call is well under 1 ms).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../broker/broker.js";
import { createLogger } from "../broker/base/log.js";
import { fmt, median, table } from "./lib/stats.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), "tether-bench-boot-"));
const log = createLogger({ level: "error" });
const cached = Broker.open({ home: join(root, "cached"), log });
const fresh = Broker.open({ home: join(root, "fresh"), log, denoCache: false });

try {
  for (const broker of [cached, fresh]) {
    await broker.registry.install(join(HERE, "../manifests/echo"));
    broker.registry.approve("echo");
  }
  const boot = async (broker: Broker, session: string): Promise<number> => {
    const started = process.hrtime.bigint();
    const outcome = await broker.callTool("echo", "echo", '{"text":"hi"}', { session });
    if (!outcome.ok) throw new Error(`echo failed: ${outcome.error.msg}`);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    await broker.deactivate(session, "echo");
    return ms;
  };
  const first = await boot(cached, "first"); // warms the cache: one extra boot
  const withCache: number[] = [];
  const without: number[] = [];
  const N = 25;
  for (let i = 0; i < N; i++) {
    withCache.push(await boot(cached, `c${i}`));
    without.push(await boot(fresh, `f${i}`));
  }
  console.log("\n== Cold boot + one call, with and without Deno's caches (bwrap, manifests/echo)\n");
  console.log(
    table(
      ["variant", `median of ${N} ms`, "ratio"],
      [
        ["fresh Deno cache every boot (before)", fmt(median(without)), "1.00"],
        [
          "the artifact's cache copied into the jail",
          fmt(median(withCache)),
          (median(withCache) / median(without)).toFixed(2),
        ],
        ["the first boot with the cache (warm-up boot + boot)", fmt(first), "—"],
      ],
    ),
  );
} finally {
  await Promise.all([cached.close(), fresh.close()]);
  rmSync(root, { recursive: true, force: true });
}
