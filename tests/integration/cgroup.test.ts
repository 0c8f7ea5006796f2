/**
 * Per-satellite cgroups on the real host: a child joins by writing "0" to each
 * procs file (as the launcher will), and the kernel enforces the bounds.
 * On a host without cgroups each test is skipped and says why.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import esbuild from "esbuild";
import { detectCgroups } from "../../broker/jail/cgroup-detect.js";
import { satelliteLimits, type SatelliteLimits } from "../../broker/jail/cgroup-limits.js";
import { sweepStaleCgroups } from "../../broker/jail/cgroup-sweep.js";
import { createSatelliteCgroup, type SatelliteCgroup } from "../../broker/jail/cgroup.js";
import { findBwrap } from "../../broker/jail/sandbox.js";
import { envJail } from "../support/env-options.js";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MiB = 1024 * 1024;
/** The mode the runner's environment asks for (TETHER_CGROUP, read as the tether command reads it). */
const MODE = envJail().cgroup;
const support = detectCgroups(MODE);
const bwrap = findBwrap();
const perl = ["/usr/bin/perl", "/bin/perl"].find((p) => existsSync(p)) ?? null;

/** A test that runs only when `why` is null, and otherwise shows as skipped with the reason. */
function needs(why: string | null): (name: string, fn: () => Promise<void>) => void {
  return (name, fn) => (why === null ? test(name, fn) : test.skip(`${name} [skipped: ${why}]`, fn));
}
const cgroupTest = needs(support.kind === "none" ? support.why : null);
const bwrapCgroupTest = needs(
  support.kind === "none" ? support.why : bwrap === null ? "bubblewrap is not installed" : null,
);
const perlCgroupTest = needs(support.kind === "none" ? support.why : perl === null ? "perl is not installed" : null);

let scratch: string;
/** The cgroup files bundled into one world-readable module, for children (another uid, a broker to kill). */
let bundle: string;
const groups: SatelliteCgroup[] = [];
const children: ChildProcess[] = [];

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "tether-cgroup-"));
  chmodSync(scratch, 0o755);
  bundle = join(scratch, "cgroup.mjs");
  const entry = [
    'export { createSatelliteCgroup, satelliteLimits, sweepStaleCgroups } from "./cgroup.ts";',
    'export { detectCgroups } from "./cgroup-detect.ts";',
  ].join("\n");
  const stdin = { contents: entry, resolveDir: join(REPO, "broker/jail"), loader: "ts" as const };
  esbuild.buildSync({
    stdin,
    bundle: true,
    platform: "node",
    format: "esm",
    // Packages too: the children run it from a scratch folder, where none resolve.
    outfile: bundle,
    logLevel: "silent",
  });
  chmodSync(bundle, 0o644);
});

afterEach(async () => {
  for (const g of groups.splice(0)) await g.remove();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await sweepStaleCgroups(MODE);
  // Our own tether-<pid> parents: a live broker keeps them, this test process is done with them.
  if (support.kind === "v1")
    for (const root of Object.values(support.roots)) if (root !== null) tryRmdir(join(root, `tether-${process.pid}`));
});

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // busy or gone
  }
}

function make(limits: Partial<SatelliteLimits> = {}): SatelliteCgroup {
  const g = createSatelliteCgroup("test", { memoryBytes: 256 * MiB, pids: 64, cpuQuota: 1, ...limits }, MODE);
  if (g === null) throw new Error(`createSatelliteCgroup returned null although detection said: ${support.describe()}`);
  groups.push(g);
  return g;
}

interface Started {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `argv` the way the launcher will: join every procs file first (write "0"), then exec. */
function startIn(g: SatelliteCgroup, argv: string[]): Started {
  const join0 =
    'n=$1; shift; i=0; while [ $i -lt $n ]; do echo 0 > "$1" || exit 97; shift; i=$((i+1)); done; exec "$@"';
  const child = spawn("sh", ["-c", join0, "sh", String(g.procsFiles.length), ...g.procsFiles, ...argv], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, pid: child.pid!, output: () => out, exited };
}

/** Polls `cond` until it holds; fails naming `what` after `ms`. */
async function until(what: string, cond: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const listed = (file: string, pid: number): boolean => readFileSync(file, "utf8").split("\n").includes(String(pid));
const joined = (g: SatelliteCgroup, pid: number): boolean => g.procsFiles.every((f) => listed(f, pid));

test("detection names what it found in one line", () => {
  const line = support.describe();
  expect(line).not.toContain("\n");
  if (support.kind === "none")
    expect(line).toMatch(/^none: .+; memory is bounded by sized mounts and the RSS watchdog$/);
  else expect(line).toMatch(new RegExp(`^cgroup ${support.kind}: .*memory.*pids.*cpu.*\\(.*writable\\)$`));
  expect(detectCgroups(MODE)).toBe(support); // cached
});

test("root, on a host with cgroup controllers mounted, gets them (so CI cannot skip the rest silently)", () => {
  const mounted = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((l) => / - cgroup \S+ \S*\bmemory\b/.test(l));
  if (process.getuid?.() !== 0 || !mounted || MODE !== undefined) return;
  expect(support.kind).not.toBe("none");
});

test("cgroup mode none (TETHER_CGROUP=none): no group, and sweeping does nothing", async () => {
  expect(detectCgroups("none")).toMatchObject({ kind: "none", why: "turned off (cgroup mode none)" });
  expect(detectCgroups("none").describe()).toBe(
    "none: turned off (cgroup mode none); memory is bounded by sized mounts and the RSS watchdog",
  );
  expect(createSatelliteCgroup("x", satelliteLimits(64), "none")).toBeNull();
  await expect(sweepStaleCgroups("none")).resolves.toEqual([]);
});

test("an unknown cgroup mode from untyped code is reported, not thrown (the tether command refuses it first)", () => {
  expect(detectCgroups("v3" as never)).toMatchObject({
    kind: "none",
    why: "cgroup mode 'v3' is not one of auto, none, v1, v2",
  });
});

test("default limits: the watchdog's RSS bound plus the jail's /tmp, 128 tasks, one CPU", () => {
  expect(satelliteLimits(64)).toEqual({ memoryBytes: (64 * 2 + 128 + 16) * MiB, pids: 128, cpuQuota: 1 });
});

cgroupTest("a child that writes 0 to every procs file is a member of the group in every hierarchy", async () => {
  const g = make();
  expect(g.procsFiles.length).toBe(
    support.kind === "v1" ? new Set(Object.values(support.roots).filter((r) => r !== null)).size : 1,
  );
  for (const d of g.dirs) expect(basename(dirname(d))).toBe(`tether-${process.pid}`);
  const p = startIn(g, ["sleep", "30"]);
  await until("the child to join", () => joined(g, p.pid));
  // /proc/<pid>/cgroup names the group in each hierarchy it joined.
  const lines = readFileSync(`/proc/${p.pid}/cgroup`, "utf8").split("\n");
  const name = `/tether-${process.pid}/${basename(g.dirs[0]!)}`;
  expect(lines.filter((l) => l.endsWith(name)).length).toBe(g.dirs.length);
  expect(g.memoryBytes()).toBeGreaterThan(0);
  expect(g.oomKilled()).toBe(false);
});

perlCgroupTest("pids.max: forking past the limit fails with EAGAIN", async () => {
  const g = make({ pids: 5 });
  // perl itself is one task; each child sleeps and so stays one.
  const script =
    'for my $n (0..50) { my $p = fork; if (!defined $p) { print(($!{EAGAIN} ? "EAGAIN" : "other: $!") . " after $n children\\n"); exit 0 } if ($p == 0) { sleep 60; exit 0 } }; print "no limit\\n"';
  const p = startIn(g, [perl!, "-e", script]);
  const { code } = await p.exited;
  // 'exit' can come before the last 'data' (the sleeping children keep the pipe open, so no 'close').
  await until("perl's last line", () => p.output().includes("\n"));
  expect({ code, output: p.output().trim() }).toEqual({ code: 0, output: "EAGAIN after 4 children" });
  await g.remove();
  for (const d of g.dirs) expect(existsSync(d)).toBe(false);
});

bwrapCgroupTest("memory counts tmpfs: 16 MiB written to the jail's --tmpfs /tmp show in memoryBytes()", async () => {
  const g = make({ memoryBytes: 64 * MiB });
  const jail = [
    bwrap!,
    "--unshare-all",
    "--die-with-parent",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--size",
    String(128 * MiB),
    "--tmpfs",
    "/tmp",
  ];
  const p = startIn(g, [
    ...jail,
    "sh",
    "-c",
    "dd if=/dev/zero of=/tmp/x bs=1M count=16 2>/dev/null && echo written && exec sleep 30",
  ]);
  await until("the write", () => p.output().includes("written"));
  // The writer holds ~1 MiB of RSS; the 16 MiB are shmem pages charged to the group.
  expect(g.memoryBytes()).toBeGreaterThanOrEqual(16 * MiB);
  expect(g.oomKilled()).toBe(false);
});

bwrapCgroupTest(
  "the memory limit stops tmpfs too: 64 MiB into the jail's /dev/shm under a 32 MiB limit is OOM-killed",
  async () => {
    const limit = 32 * MiB;
    const g = make({ memoryBytes: limit });
    // bwrap --dev gives /dev (and /dev/shm) a tmpfs of half the host's RAM: only the cgroup bounds it.
    const jail = [
      bwrap!,
      "--unshare-all",
      "--die-with-parent",
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
    ];
    const p = startIn(g, [...jail, "sh", "-c", "dd if=/dev/zero of=/dev/shm/x bs=1M count=64 2>/dev/null; echo dd=$?"]);
    const exit = await p.exited;
    expect(p.output()).not.toContain("dd=0");
    expect({ exit, output: p.output().trim() }).toEqual({ exit: { code: 0, signal: null }, output: "dd=137" }); // dd died of SIGKILL
    expect(g.oomKilled()).toBe(true);
    expect(g.memoryPeakBytes()).toBeLessThanOrEqual(limit);
  },
);

cgroupTest("cpuNanos() grows with a busy loop, and a quota of 0.05 CPU throttles it", async () => {
  // A small quota, so that even a loaded host (this one runs other suites at once) gives the loop more than it may use.
  const g = make({ cpuQuota: 0.05 });
  const p = startIn(g, ["sh", "-c", "while :; do :; done"]);
  await until("the child to join", () => joined(g, p.pid));
  const cpu0 = g.cpuNanos();
  if (cpu0 === null) throw new Error("no CPU accounting although cgroups were detected");
  const t0 = process.hrtime.bigint();
  await until("50 ms of CPU", () => g.cpuNanos()! - cpu0 >= 50e6);
  const wall = Number(process.hrtime.bigint() - t0);
  // 5 ms per 100 ms period: over >= 1 s of wall time, at most ~0.055 with one period of slack.
  expect((g.cpuNanos()! - cpu0) / wall).toBeLessThan(0.08);
  const stat = g.dirs
    .map((d) => join(d, "cpu.stat"))
    .find((f) => existsSync(f) && readFileSync(f, "utf8").includes("nr_throttled"))!;
  expect(Number(/nr_throttled (\d+)/.exec(readFileSync(stat, "utf8"))![1])).toBeGreaterThan(0);
});

cgroupTest(
  "kill() SIGKILLs everything in the group; remove() leaves no directory and keeps the last readings",
  async () => {
    const g = make();
    const p = startIn(g, ["sh", "-c", "sleep 30 & sleep 30 & while :; do :; done"]);
    await until("the child to join", () => joined(g, p.pid));
    await until(
      "three tasks in the group",
      () => readFileSync(g.procsFiles[0]!, "utf8").trim().split("\n").length === 3,
    );
    const grandchildren = readFileSync(g.procsFiles[0]!, "utf8").trim().split("\n").map(Number);
    await until("some CPU time", () => (g.cpuNanos() ?? 0) > 1e6);
    g.kill();
    expect(await p.exited).toEqual({ code: null, signal: "SIGKILL" });
    await g.remove();
    for (const d of g.dirs) expect(existsSync(d)).toBe(false);
    for (const pid of grandchildren)
      expect(existsSync(`/proc/${pid}/cgroup`) && readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2] !== "Z").toBe(
        false,
      );
    expect(g.cpuNanos() ?? 0).toBeGreaterThan(1e6);
    expect(g.oomKilled()).toBe(false);
    await g.remove(); // twice is fine
  },
);

cgroupTest(
  "sweepStaleCgroups() removes the groups of a broker killed with SIGKILL, and what still ran in them",
  async () => {
    // A "broker": makes a group, starts a process in it that outlives it, reports, then waits to be killed.
    const broker = join(scratch, "broker.mjs");
    const code = `import { createSatelliteCgroup } from ${JSON.stringify(bundle)};
import { spawn } from "node:child_process";
const g = createSatelliteCgroup("orphan", { memoryBytes: 64 * 1024 * 1024, pids: 16, cpuQuota: 1 }, ${JSON.stringify(MODE ?? "auto")});
const c = spawn("sh", ["-c", 'for f in "$@"; do echo 0 > "$f"; done; exec sleep 300', "sh", ...g.procsFiles], { stdio: "ignore", detached: true });
c.unref();
const until = Date.now() + 10000;
const fs = await import("node:fs");
while (!g.procsFiles.every((f) => fs.readFileSync(f, "utf8").split("\\n").includes(String(c.pid))) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
console.log(JSON.stringify({ dirs: g.dirs, orphan: c.pid }));
setInterval(() => {}, 1000);
`;
    writeFileSync(broker, code);
    const child = spawn(process.execPath, [broker], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    await until("the broker's report", () => out.includes("\n"));
    const { dirs, orphan } = JSON.parse(out) as { dirs: string[]; orphan: number };
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    const parents = [...new Set(dirs.map((d) => dirname(d)))];
    for (const d of [...dirs, ...parents]) expect(existsSync(d)).toBe(true); // leaked until swept
    expect(existsSync(`/proc/${orphan}`)).toBe(true);

    const removed = await sweepStaleCgroups(MODE);
    // Another suite sweeping at the same moment may have taken some; none of a live broker's.
    for (const d of removed) expect(alive(Number(/tether-(\d+)$/.exec(d)![1]))).toBe(false);
    expect(removed.length).toBeGreaterThan(0);
    for (const d of [...dirs, ...parents]) expect(existsSync(d)).toBe(false);
    await until(
      "the orphan to be gone",
      () => !existsSync(`/proc/${orphan}`) || readFileSync(`/proc/${orphan}/stat`, "utf8").split(" ")[2] === "Z",
    );
    // A live broker's groups (ours) are left alone.
    const mine = make();
    await sweepStaleCgroups(MODE);
    for (const d of mine.dirs) expect(existsSync(d)).toBe(true);
  },
);

test("a non-root broker (uid 65534) detects without throwing, and gets no group unless one is delegated", () => {
  if (process.getuid?.() !== 0) return; // only root can become another uid
  const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));
  if (setpriv === undefined) throw new Error("setpriv (util-linux) is needed to run detection as uid 65534");
  const probe = `const m = await import(${JSON.stringify(bundle)});
const mode = process.argv[1] || "auto";
const s = m.detectCgroups(mode);
const g = m.createSatelliteCgroup("nobody", m.satelliteLimits(64), mode);
const swept = await m.sweepStaleCgroups(mode);
console.log(JSON.stringify({ kind: s.kind, describe: s.describe(), group: g === null ? null : g.dirs, swept }));
if (g !== null) await g.remove();`;
  const rootOnlyV1 =
    support.kind === "v1" &&
    Object.values(support.roots).every((r) => {
      if (r === null) return true;
      const st = statSync(r);
      return st.uid === 0 && (st.mode & 0o022) === 0;
    });
  for (const mode of [undefined, "v1", "v2"]) {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
    const r = spawnSync(
      setpriv,
      [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        process.execPath,
        "--input-type=module",
        "-e",
        probe,
        mode ?? "auto",
      ],
      { cwd: scratch, env, encoding: "utf8", timeout: 30_000 },
    );
    expect({ mode, status: r.status, stderr: r.stderr }).toEqual({ mode, status: 0, stderr: "" });
    const seen = JSON.parse(r.stdout) as { kind: string; describe: string; group: string[] | null; swept: string[] };
    expect(seen.group === null).toBe(seen.kind === "none");
    if (rootOnlyV1 && mode !== "v2") {
      // Here v1 belongs to root and cgroup2 offers no controllers: nothing for uid 65534.
      expect(seen).toMatchObject({ kind: "none", group: null, swept: [] });
      expect(seen.describe).toMatch(
        /^none: .*not writable here \(EACCES\).*; memory is bounded by sized mounts and the RSS watchdog$/,
      );
    }
  }
});
