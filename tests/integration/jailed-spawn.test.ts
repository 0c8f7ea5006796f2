/**
 * `spawnJailed` (broker/jail/spawn.ts) starts every satellite and host job with Node's own
 * spawn: what the callers rely on — how a process ended, that one which never started says
 * so, its own process group when detached, and that a broker which exits kills what it
 * started (what execa's `cleanup` did before) — is held here with real processes.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { jobFailure, runHostJob, type HostJob } from "../../broker/jail/host-job.js";
import { nativeProgram } from "../../broker/jail/native/compile.js";
import { spawnJailed } from "../../broker/jail/spawn.js";
import { envJail } from "../support/env-options.js";
import type { Launch } from "../../broker/jail/sandbox.js";
import { REPO } from "../unit/support/repo-files.js";

const run = promisify(execFile);

/** A launch without bwrap (its options are null): `sh -c script`. */
const shell = (script: string): Launch => ({
  file: "/bin/sh",
  args: ["-c", script],
  bwrapOptions: null,
  env: {},
  files: [],
});

/** Gone, or a zombie waiting for init: no longer running. */
function running(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return false;
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

/** Whether `pid` is gone (or a zombie) within `ms`: it is not this process's child, so there is no exit event to wait on. */
async function endsWithin(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (running(pid)) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

test("exited gives the exit code, and what the process wrote has been read by then", async () => {
  const child = spawnJailed(shell('read line; echo "got $line"; exit 3'));
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stdin?.end("token\n");
  expect(await child.exited).toEqual({ exitCode: 3, signal: null });
  expect(out).toBe("got token\n");
});

test("exited gives the signal that ended it", async () => {
  const child = spawnJailed(shell("exec sleep 300"));
  child.kill("SIGKILL");
  expect(await child.exited).toEqual({ exitCode: null, signal: "SIGKILL" });
});

test("a process that could not start rejects exited, naming why", async () => {
  const child = spawnJailed({ ...shell(""), file: "/nonexistent/launcher" });
  await expect(child.exited).rejects.toThrow(/ENOENT/);
});

test("the environment is exactly the launch's", async () => {
  const child = spawnJailed({ ...shell("env"), env: { ONLY: "this" } });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  await child.exited;
  const names = out
    .trim()
    .split("\n")
    .map((l) => l.split("=")[0])
    .filter((n) => n !== "PWD" && n !== "SHLVL" && n !== "_"); // the shell's own
  expect(names).toEqual(["ONLY"]);
});

test("detached, it leads a process group of its own", async () => {
  const child = spawnJailed(shell("exec sleep 300"), { detached: true });
  const pid = child.pid!;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  expect(Number(fields[2])).toBe(pid); // pgrp
  child.kill("SIGKILL");
  await child.exited;
});

test("a broker that exits kills what it started, detached or not", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tether-spawn-"));
  try {
    const script = join(dir, "broker.mts");
    const spawnUrl = pathToFileURL(join(REPO, "broker/jail/spawn.ts")).href;
    writeFileSync(
      script,
      `import { spawnJailed } from ${JSON.stringify(spawnUrl)};
const launch = { file: "/bin/sh", args: ["-c", "exec sleep 300"], bwrapOptions: null, env: {}, files: [] };
const a = spawnJailed(launch, { detached: true });
const b = spawnJailed(launch);
console.log(JSON.stringify([a.pid, b.pid]));
process.exit(0);
`,
    );
    const { stdout } = await run(process.execPath, ["--import", "tsx", script], { cwd: REPO, timeout: 60_000 });
    const pids = JSON.parse(stdout) as number[];
    expect(pids).toHaveLength(2);
    // SIGKILL was sent as the broker exited; the process ends when the kernel next runs it (later, on a busy machine).
    expect(running(process.pid)).toBe(true); // this /proc shows processes: "ended" below is seen, not assumed
    for (const pid of pids) expect(await endsWithin(pid, 10_000)).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000); // the broker's run (up to 60 s) and the two waits: a slow failure reads as one, not as a timeout

test("a host job whose launcher cannot start says so (an install error, not an unexpected one)", async () => {
  // A native folder whose launcher is there but not executable: the spawn itself fails (EACCES).
  const dir = mkdtempSync(join(tmpdir(), "tether-native-"));
  try {
    writeFileSync(join(dir, basename(nativeProgram("jail-exec", envJail().nativeDir))), "", { mode: 0o644 });
    const job: HostJob = {
      label: "bundler",
      runtime: "node",
      script: join(dir, "none.js"),
      args: [],
      memoryBytes: 64 * 1024 * 1024,
      jail: { ...envJail(), nativeDir: dir },
      sandbox: "none",
    };
    const r = await runHostJob(job, "", 30_000, 1024);
    expect(r.startError).toMatch(/EACCES/);
    expect(jobFailure(job, r, 30_000)).toMatch(/^the bundler could not start: .*EACCES/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
