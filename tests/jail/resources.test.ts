/**
 * Host memory, host root, CPU after the answer, /proc: the jail's resource and
 * privilege classes (escape findings 2–4). Each class is probed over all its
 * members as the host lists them — every mount of the jail, every writable
 * path, every masked /proc entry — not over the one path that was reported.
 *
 * Two views: the host's (/proc/<pid> of the jailed Deno) and the OS layer
 * alone (a Deno with --allow-all in the same jail, as a Deno bypass would
 * leave an attacker).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { detectCgroups } from "../../broker/jail/cgroup-detect.js";
import { satelliteLimits } from "../../broker/jail/cgroup-limits.js";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { DENO_CACHE_MAX_BYTES, denoCacheFor } from "../../broker/jail/deno-cache.js";
import { JAIL_TMP_BYTES, PROC_MASKED_DIRS, PROC_MASKED_FILES } from "../../broker/jail/sandbox.js";
import { createLogger } from "../../broker/base/log.js";
import { SatelliteProcess } from "../../broker/satellite/process.js";
import type { SatelliteSlot } from "../../broker/satellite/slot.js";
import { jailTmpBytes, processTree } from "../../broker/satellite/memory-watch.js";
import { REPO, bundleToTemp, slotFor, specFor, type Bundled } from "../support/satellites.js";
import { runWithOsLayerOnly } from "./support/os-layer.js";
import { envJail, envJailIdentity, envOptions } from "../support/env-options.js";
import { blockText } from "../../broker/base/outcome.js";

const FIXTURE = "tests/jail/fixtures/hostile-resources";

let bundled: Bundled;
let slot: SatelliteSlot;
let deno: number;

interface Mount {
  readonly point: string;
  readonly options: readonly string[];
  readonly fstype: string;
  readonly source: string;
  readonly superOptions: readonly string[];
  readonly root: string;
}

function mountsOf(pid: number): Mount[] {
  return readFileSync(`/proc/${pid}/mountinfo`, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [left, right] = line.split(" - ");
      const f = left!.split(" ");
      const [fstype, source, superOptions] = right!.split(" ");
      return {
        root: f[3]!,
        point: f[4]!,
        options: f[5]!.split(","),
        fstype: fstype!,
        source: source!,
        superOptions: superOptions!.split(","),
      };
    });
}

function status(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, "utf8").split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

async function call(name: string, args: object = {}): Promise<unknown> {
  const outcome = await slot.invoke({
    kind: "tool",
    name,
    args: JSON.stringify(args),
    strand: "r",
    deadlineMs: 10_000,
  });
  if (!outcome.ok) throw new Error(`${name}: ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content[0]!;
  return block.type === "json" ? block.json : blockText(block);
}

beforeAll(async () => {
  bundled = await bundleToTemp(FIXTURE);
  slot = slotFor(bundled);
  expect(await call("ping")).toBe("pong");
  const tree = processTree(slot.process!.pid!);
  deno = tree.find((p) => readFileSync(`/proc/${p}/comm`, "utf8").trim() === "deno")!;
  expect(deno).toBeDefined();
});

afterAll(async () => {
  await slot?.destroy("done");
  bundled?.cleanup();
});

/** Device nodes bwrap binds in: writing them stores nothing. */
const DEVICE_BINDS = new Set(["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"]);

describe("privilege: never host root", () => {
  test("R01-host-uid: every process of the jail runs as an unprivileged host uid with no capabilities, no_new_privs and seccomp", () => {
    const expected = envJailIdentity() ?? { uid: process.getuid!(), gid: process.getgid!() };
    expect(expected.uid).not.toBe(0);
    const tree = processTree(slot.process!.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(3); // bwrap, its init, Deno
    for (const pid of tree) {
      const s = status(pid);
      expect([pid, s.Uid!.split(/\s+/).map(Number), s.Gid!.split(/\s+/).map(Number), s.Groups]).toEqual([
        pid,
        Array(4).fill(expected.uid),
        Array(4).fill(expected.gid),
        "",
      ]);
      expect([pid, s.CapEff, s.CapPrm, s.CapAmb, s.NoNewPrivs]).toEqual([
        pid,
        "0000000000000000",
        "0000000000000000",
        "0000000000000000",
        "1",
      ]);
    }
    expect([status(deno).Seccomp, status(deno).CapBnd]).toEqual(["2", "0000000000000000"]);
  });
});

describe("memory: every writable mount is bounded", () => {
  test("R02-mounts-host-view: every mount the jail can write is a tmpfs of at most the /tmp bound, or stores nothing", () => {
    const unbounded: string[] = [];
    for (const m of mountsOf(deno)) {
      if (!m.options.includes("rw")) continue;
      const size = /^size=(\d+)k$/.exec(m.superOptions.find((o) => o.startsWith("size=")) ?? "");
      const bounded = m.fstype === "tmpfs" && size !== null && Number(size[1]) * 1024 <= JAIL_TMP_BYTES;
      const storesNothing =
        m.fstype === "proc" || m.fstype === "devpts" || DEVICE_BINDS.has(m.point) || m.point === "/run/tether/s.sock";
      if (!bounded && !storesNothing) unbounded.push(`${m.point} (${m.fstype} ${m.superOptions.join(",")})`);
    }
    expect(unbounded).toEqual([]);
  });

  test("R03-write-every-path-os-alone: with Deno's checks off, no path of the jail takes more than the /tmp bound", async () => {
    // Every mount point, each one's parent and bwrap's own folders: written until refused or 48 MiB.
    const result = (await runWithOsLayerOnly(`
      const points = new Set(["/", "/dev", "/dev/shm", "/run", "/run/tether", "/opt/tether", "/tmp", "/tmp/deno", "/proc", "/lib", "/lib64"]);
      for (const line of Deno.readTextFileSync("/proc/self/mountinfo").trim().split("\\n")) {
        const point = line.split(" ")[4];
        points.add(point);
        points.add(point.slice(0, point.lastIndexOf("/")) || "/");
      }
      const chunk = new Uint8Array(1 << 20);
      const out = {};
      for (const dir of points) {
        let written = 0, error = null;
        const file = dir.replace(/\\/$/, "") + "/.tether-fill";
        try {
          const f = Deno.openSync(file, { write: true, create: true });
          try { while (written < 48) { f.writeSync(chunk); written++; } } finally { f.close(); }
        } catch (e) { error = e.name; }
        try { Deno.removeSync(file); } catch {}
        out[dir] = { written, error };
      }
      console.log(JSON.stringify(out));
    `)) as Record<string, { written: number; error: string | null }>;
    const dirs = Object.keys(result);
    expect(dirs.length).toBeGreaterThan(10);
    const tooMuch = Object.entries(result).filter(([, r]) => r.written * 2 ** 20 > JAIL_TMP_BYTES);
    expect(tooMuch).toEqual([]);
    // The only place that takes anything is the bounded /tmp.
    expect(
      Object.entries(result)
        .filter(([, r]) => r.written > 0)
        .map(([d]) => d)
        .sort(),
    ).toEqual(expect.arrayContaining(["/tmp"]));
  });

  test("R04-sqlite-temp-store: node:sqlite's temp store (no permission needed) takes at most the /tmp bound, wherever it points", async () => {
    const points = [
      ...new Set([
        "/dev/shm",
        "/dev",
        "/",
        "/run",
        "/run/tether",
        "/opt/tether",
        "/tmp",
        ...mountsOf(deno).map((m) => m.point),
      ]),
    ];
    const results: Record<string, { written: number; error: string | null }> = {};
    for (const dir of points)
      results[dir] = (await call("sqlite_temp", { dir, mb: 48 })) as { written: number; error: string | null };
    // Written rows are MiB; SQLite keeps up to cache_size pages in memory before it spills to the file.
    const over = Object.entries(results).filter(([, r]) => r.written * 2 ** 20 > JAIL_TMP_BYTES + 4 * 2 ** 20);
    expect(over).toEqual([]);
    expect(results["/dev/shm"]!.error).not.toBeNull();
    // What the jail's tmpfs holds, seen from the host, never passes its size.
    const tmp = statfsSync(`/proc/${deno}/root/tmp`);
    expect((tmp.blocks - tmp.bfree) * tmp.bsize).toBeLessThanOrEqual(JAIL_TMP_BYTES);
    // The watchdog (the bound where no cgroup is) counts it: shared memory no RSS shows.
    expect(jailTmpBytes(deno)).toBe((tmp.blocks - tmp.bfree) * tmp.bsize);
    expect(jailTmpBytes(deno)).toBeGreaterThan(8 * 2 ** 20);
  });

  test("R05-cgroup: where the host offers a cgroup, the jail is inside one with its memory, process and CPU bounds", () => {
    const support = detectCgroups(envJail().cgroup);
    if (support.kind === "none") {
      console.log(`R05: no cgroup on this host (${support.why}); bounds are the sized mounts and the RSS watchdog`);
      return;
    }
    const lines = readFileSync(`/proc/${deno}/cgroup`, "utf8").trim().split("\n");
    const ours = lines.filter((l) => l.includes(`/tether-${process.pid}/`));
    expect(ours.length).toBeGreaterThanOrEqual(support.kind === "v1" ? 3 : 1);
    const limits = satelliteLimits(64);
    if (support.kind === "v1") {
      const memory = lines.find((l) => /:memory:/.test(l))!.split(":")[2]!;
      const pids = lines.find((l) => /:pids:/.test(l))!.split(":")[2]!;
      // Paths in /proc/<pid>/cgroup are relative to each hierarchy's mount.
      expect(Number(readFileSync(join("/sys/fs/cgroup/memory", memory, "memory.limit_in_bytes"), "utf8"))).toBe(
        limits.memoryBytes,
      );
      expect(Number(readFileSync(join("/sys/fs/cgroup/pids", pids, "pids.max"), "utf8"))).toBe(limits.pids);
    }
  });
});

describe("/proc: what container runtimes mask", () => {
  test("R06-proc-masked-host-view: every masked /proc entry that exists on the host is covered in the jail", () => {
    const mounted = new Map(mountsOf(deno).map((m) => [m.point, m]));
    const missing = [
      ...PROC_MASKED_FILES.map((f) => `/proc/${f}`),
      ...PROC_MASKED_DIRS.map((d) => `/proc/${d}`),
    ].filter((p) => {
      let exists = true;
      try {
        statfsSync(p);
      } catch {
        exists = false;
      }
      return exists && !mounted.has(p);
    });
    expect(missing).toEqual([]);
  });

  test("R07-proc-masked-os-alone: with Deno's checks off, masked files read empty or refuse, masked folders list nothing", async () => {
    const entries = [
      ...PROC_MASKED_FILES.map((f) => ({ path: `/proc/${f}`, dir: false })),
      ...PROC_MASKED_DIRS.map((d) => ({ path: `/proc/${d}`, dir: true })),
    ];
    const result = (await runWithOsLayerOnly(`
      const out = {};
      for (const { path, dir } of ${JSON.stringify(entries)}) {
        try {
          out[path] = dir ? { entries: [...Deno.readDirSync(path)].length } : { bytes: Deno.readFileSync(path).length };
        } catch (e) { out[path] = { error: e.name }; }
      }
      console.log(JSON.stringify(out));
    `)) as Record<string, { bytes?: number; entries?: number; error?: string }>;
    const leaking = Object.entries(result).filter(([, r]) => (r.bytes ?? 0) > 0 || (r.entries ?? 0) > 0);
    expect(leaking).toEqual([]);
  });
});

describe("CPU after the answer", () => {
  let tmp: string;
  let broker: Broker;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "tether-cpu-"));
    broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: createLogger({ level: "error" }) });
    const { installed } = await broker.registry.install(join(REPO, FIXTURE));
    broker.registry.approve(installed.manifest.name);
  });

  afterAll(async () => {
    await broker?.destroy();
    rmSync(tmp, { recursive: true, force: true });
  });

  test("R08-worker-after-answer: a Worker left spinning after the answer is stopped and audited; the next call boots afresh", async () => {
    const first = await broker.callTool("hoarder", "spin", "{}", { session: "default" });
    expect(first.ok).toBe(true);
    type Row = { capability: string; decision: string; rule: string; target: string };
    const rows = () =>
      broker.store.sqlite
        .prepare("select capability, decision, rule, target from cap_audit where capability like 'jail.%'")
        .all() as Row[];
    // Waits for the event (the audit row), bounded: the budget is 1 s of CPU, metered each second.
    for (let i = 0; i < 150 && rows().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(rows()).toEqual([
      {
        capability: "jail.cpu",
        decision: "denied",
        rule: "cpu_bound",
        target: expect.stringMatching(
          /^kept running with no invocation open \(\d+ ms of CPU in \d+ ms since its last answer\), and was stopped$/,
        ),
      },
    ]);
    const again = await broker.callTool("hoarder", "ping", "{}", { session: "default" });
    expect(again).toMatchObject({ ok: true });
  });

  test("R10-neighbours: while one session's satellite spins and hoards, another session keeps being served and the broker's memory stays put", async () => {
    const rss = process.memoryUsage().rss;
    expect(await broker.callTool("hoarder", "spin", "{}", { session: "hostile" })).toMatchObject({ ok: true });
    const hoard = await broker.callTool("hoarder", "sqlite_temp", JSON.stringify({ dir: "/tmp", mb: 48 }), {
      session: "hostile-2",
    });
    expect(hoard).toMatchObject({ ok: true });
    for (let i = 0; i < 20; i++)
      expect(await broker.callTool("hoarder", "ping", "{}", { session: "quiet" })).toMatchObject({ ok: true });
    // The hoard lives in the jail (its tmpfs, its cgroup), not in the broker.
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * 2 ** 20);
  });
});

describe("disk: the warm-up boot", () => {
  test("R09-warm-up-bounded: top-level code that bloats Deno's caches (40 MB unbounded) writes at most the cache bound into each host file", async () => {
    const src = mkdtempSync(join(tmpdir(), "tether-bloat-"));
    const root = mkdtempSync(join(tmpdir(), "tether-bloat-cache-"));
    try {
      writeFileSync(
        join(src, "manifest.toml"),
        'name = "bloat"\nversion = "1.0.0"\ndescription = "Bloats the Deno cache at load."\nentry = "index.ts"\n\n[[tool]]\nname = "ping"\ndescription = "pong"\n',
      );
      writeFileSync(
        join(src, "index.ts"),
        [
          'import { outcome, text, type Tool } from "@tether/ext";',
          "// At load, during the warm-up boot too: each module analysed and code-cached by Deno, 1 MB apiece.",
          "for (let i = 0; i < 8; i++) {",
          '  const source = `export const x = ${JSON.stringify("z".repeat(1_000_000))}; export function f${i}() { return ${i}; }`;',
          '  await import("data:text/javascript;base64," + btoa(source));',
          "}",
          'export const tools: Record<string, Tool> = { ping: () => outcome([text("pong")]) };',
        ].join("\n"),
      );
      const bloat = await bundleToTemp(src);
      const seen: number[] = [];
      const source = denoCacheFor(
        root,
        "b".repeat(64),
        denoBinary(envJail().deno),
        async (mount) => {
          // Compiling 8 MB of modules with no cache is slow on a loaded machine: a boot deadline to match.
          const warm = await SatelliteProcess.boot({ ...specFor(bloat), bootTimeoutMs: 60_000, denoCache: mount });
          await warm.close();
          for (const file of readdirSync(mount.dir)) seen.push(statSync(join(mount.dir, file)).size);
        },
        envJailIdentity(),
      );
      const cache = await source();
      expect(seen.length).toBeGreaterThan(0);
      expect(Math.max(...seen)).toBeLessThanOrEqual(DENO_CACHE_MAX_BYTES);
      // What is kept is within the bound too (or nothing, and boots run without a cache).
      const kept =
        cache === null ? 0 : readdirSync(cache.dir).reduce((sum, f) => sum + statSync(join(cache.dir, f)).size, 0);
      expect(kept).toBeLessThanOrEqual(DENO_CACHE_MAX_BYTES);
      // And the extension still serves.
      const s = slotFor(bloat, { bootTimeoutMs: 60_000, ...(cache === null ? {} : { denoCache: cache }) });
      try {
        expect(
          await s.invoke({ kind: "tool", name: "ping", args: "{}", strand: "b", deadlineMs: 10_000 }),
        ).toMatchObject({ ok: true });
      } finally {
        await s.destroy("done");
        bloat.cleanup();
      }
    } finally {
      rmSync(src, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
    }
  });
});
