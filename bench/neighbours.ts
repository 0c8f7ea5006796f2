/**
 * `make bench` (neighbours): what a hostile neighbour costs the well-behaved.
 *
 * Two well-behaved satellites (manifests/echo, as two sessions would have
 * them) call steadily, one call after another each; first alone, then while,
 * in turn, a neighbour inside the protocol does its worst:
 *  - a satellite floods capability calls with a forged token (refusals);
 *  - a satellite sends frames as large as the bounds allow between calls;
 *  - a satellite answers JSON blocks as large as the bounds allow;
 *  - a `tether serve` client pipelines requests as large as the caller bounds allow
 *    (the server's connection, in this process: its parsing shares this thread).
 * The hostile satellites are the scripted fakes of the socket-level harness
 * (tests/integration/fixtures/fake-satellites), launched through the real jail.
 *
 * Target per neighbour: the well-behaved p99 within 2× the p99 without it,
 * and the broker's RSS within RSS_BOUND_MIB of where it started. Prints PASS/MISS.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import { ARTIFACT_BUILD_OPTIONS } from "../broker/install/bundle.js";
import { CALLER_JSON_BOUNDS } from "../jail-runtime/wire/document-bounds.js";
import { readManifest } from "../broker/install/manifest.js";
import { silentLogger } from "../broker/base/log.js";
import { Connection, DEFAULT_LIMITS, type ClientSocket, type Handler } from "../broker/serve/connection.js";
import type { SatelliteSlot } from "../broker/satellite/slot.js";
import { REPO, bundleToTemp, slotFor, type Bundled } from "../tests/support/satellites.js";
import { fmt, summarise, table } from "./lib/stats.js";

const FAKE_DIR = join(REPO, "tests/integration/fixtures/fake-satellites");
const CALLS = Number(process.env.NEIGHBOURS_CALLS ?? 1500);
const RSS_BOUND_MIB = 256;

const call = (name: string, args: unknown = {}) => ({
  kind: "tool" as const,
  name,
  args: JSON.stringify(args),
  strand: "bench",
  deadlineMs: 10_000,
});

async function steady(slot: SatelliteSlot, n: number): Promise<bigint[]> {
  const samples: bigint[] = [];
  for (let i = 0; i < n; i++) {
    const started = process.hrtime.bigint();
    const outcome = await slot.invoke(call("echo", { text: "hi" }));
    samples.push(process.hrtime.bigint() - started);
    if (!outcome.ok) throw new Error(`a well-behaved call failed: ${outcome.error.msg}`);
  }
  return samples;
}

/** Runs `hostile` in a loop until `stop` resolves. */
async function meanwhile(hostile: () => Promise<unknown>, stop: Promise<unknown>): Promise<number> {
  let rounds = 0;
  let done = false;
  void stop.then(() => (done = true));
  while (!done) {
    await hostile();
    rounds++;
    // A real neighbour's bytes arrive as I/O events: let the event loop turn between rounds.
    await new Promise((r) => setImmediate(r));
  }
  return rounds;
}

class NullSocket implements ClientSocket {
  readyState = 1;
  bufferedAmount = 0;
  send(): void {}
  close(): void {}
  terminate(): void {}
}

const nullHandler: Handler = {
  accepting: true,
  began() {},
  ended() {},
  handle: async () => null,
} as unknown as Handler;
/** Requests as large as the caller bounds allow (16,384 elements), made once: the client's cost is not the broker's. */
const LARGEST_ARGS = `{${Array.from({ length: CALLER_JSON_BOUNDS.maxElements - 16 }, (_, i) => `"k${i}":${i}`).join(",")}}`;
const LARGEST_REQUESTS = Array.from(
  { length: 8 },
  (_, id) =>
    `{"jsonrpc":"2.0","id":${id},"method":"tool.call","params":{"session":"s","tool":"t","args":${LARGEST_ARGS}}}`,
);

const tmp = mkdtempSync(join(tmpdir(), "tether-bench-neighbours-"));
const slots: SatelliteSlot[] = [];
let echo: Bundled | undefined;
try {
  echo = await bundleToTemp("manifests/echo");
  const built = await esbuild.build({
    ...ARTIFACT_BUILD_OPTIONS,
    stdin: {
      contents: `import { play } from "./scripts.ts";\nawait play("serve");\n`,
      resolveDir: FAKE_DIR,
      sourcefile: "serve.ts",
      loader: "ts",
    },
    absWorkingDir: FAKE_DIR,
  });
  writeFileSync(join(tmp, "serve.js"), built.outputFiles[0]!.text);
  const fake: Bundled = { manifest: readManifest(FAKE_DIR), artifact: join(tmp, "serve.js"), cleanup: () => {} };
  const good = [slotFor(echo), slotFor(echo)];
  const hostile = slotFor(fake, { name: "hostile" });
  slots.push(...good, hostile);
  process.stderr.write("neighbours: booting and warming up the well-behaved satellites…\n");
  for (const s of good) await steady(s, 50); // boot and warm up

  const neighbours: Array<{ name: string; run: () => Promise<unknown> }> = [
    { name: "none (baseline)", run: async () => new Promise((r) => setTimeout(r, 5)) },
    { name: "refusal flood (forged tokens)", run: () => hostile.invoke(call("stray_caps", { count: 10_000 })) },
    {
      name: "largest legal frames between calls",
      run: () => hostile.invoke(call("stray_caps", { count: 100, keys: 8_000 })),
    },
    {
      name: "largest legal answers (100k-element JSON)",
      run: () => hostile.invoke(call("wide_json", { count: 99_000 })),
    },
    {
      name: "serve client: largest legal requests, 8 pipelined",
      run: async () => {
        const connection = new Connection(new NullSocket(), nullHandler, DEFAULT_LIMITS, silentLogger);
        await Promise.all(LARGEST_REQUESTS.map((message) => connection.receive(message)));
      },
    },
  ];

  const rows: string[][] = [];
  let baselineP99 = 0;
  const rss0 = process.memoryUsage().rss;
  let verdicts = 0;
  for (const neighbour of neighbours) {
    process.stderr.write(`neighbours: ${neighbour.name}…\n`);
    let release!: () => void;
    const stop = new Promise<void>((r) => (release = r));
    let peak = process.memoryUsage().rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    const hostileRounds = meanwhile(neighbour.run, stop);
    const samples = (await Promise.all(good.map((s) => steady(s, CALLS)))).flat();
    release();
    const rounds = await hostileRounds;
    clearInterval(sampler);
    const latency = summarise(samples);
    if (baselineP99 === 0) baselineP99 = latency.p99;
    const ratio = latency.p99 / baselineP99;
    const rssMib = (peak - rss0) / 2 ** 20;
    const pass = ratio <= 2 && rssMib <= RSS_BOUND_MIB;
    if (pass) verdicts++;
    rows.push([
      neighbour.name,
      String(rounds),
      fmt(latency.p50),
      fmt(latency.p99),
      fmt(ratio, 2),
      `+${fmt(Math.max(0, rssMib))}`,
      pass ? "PASS" : "MISS",
    ]);
  }
  console.log(
    `\nHostile neighbours: ${good.length} well-behaved satellites × ${CALLS} sequential echo calls each, per neighbour (µs)\n`,
  );
  console.log(
    table(
      ["neighbour", "hostile rounds", "p50", "p99", "p99 vs none", `broker RSS MiB (≤ ${RSS_BOUND_MIB})`, "target"],
      rows,
    ),
  );
  console.log(`\n${verdicts}/${neighbours.length} PASS (target: p99 within 2× the baseline, RSS within the bound)`);
} finally {
  await Promise.all(slots.map((s) => s.destroy("bench over")));
  echo?.cleanup();
  rmSync(tmp, { recursive: true, force: true });
}
