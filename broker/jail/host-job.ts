/**
 * A host-side job: work the broker does *for* an extension on bytes the
 * extension controls — bundling its folder, type-checking it, running its
 * SQL and migrations — run in the satellite's jail, with the satellite's
 * launcher and layers (launchCommand): no host descriptor, an unprivileged
 * host uid, namespaces with no network and none of the host's files, the
 * seccomp filter, a cgroup where the host has one, and limits on file size
 * and memory. Only what the job names is shown to it, by descriptor:
 * its program (Node or Deno) with the libraries it links, its trusted
 * script, and its binds (a folder snapshot read-only, a database file
 * writable). Nothing here reads what the job reads. Under a root broker
 * each bind is staged by the launcher (jail-exec --stage) onto a placeholder
 * the jail uid can reach, so a 0700 home or checkout is no obstacle.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSatelliteCgroup, type SatelliteCgroup } from "./cgroup.js";
import type { SatelliteLimits } from "./cgroup-limits.js";
import { denoBinary } from "./deno-binary.js";
import { jailIdentity, makeSatelliteDir, type JailIdentity } from "./identity.js";
import { launchCommand, type JailBind, type Launch, type SandboxMode } from "./sandbox.js";
import { seccompFilter } from "./seccomp.js";
import type { JailSetup } from "./setup.js";
import { type JailedChild, type JailedExit, spawnJailed } from "./spawn.js";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

/** How much of a job's stderr is kept: its end, which says why it failed. */
const STDERR_TAIL_BYTES = 65_536;
const tailOf = (bytes: Buffer): Buffer => bytes.subarray(Math.max(0, bytes.length - STDERR_TAIL_BYTES));

/** Where a host-side job's program sits inside its jail. */
export const JOB_NODE = "/opt/tether/node";
export const JOB_SCRIPT = "/opt/tether/job.cjs";

/** How a broker's host-side jobs are jailed: as its satellites are (its jail options and sandbox mode). */
export interface HostJobSetup {
  readonly jail?: JailSetup;
  /** bwrap unless "none" (insecure) is asked for; refused when bwrap is missing. */
  readonly sandbox?: SandboxMode;
  /**
   * Where bundles are kept to be reused (an absolute folder; broker/install/bundle-cache.ts);
   * false: none; absent: ~/.cache/tether/bundles.
   */
  readonly bundleCache?: string | false;
}

export interface HostJob {
  /** What it is, for its cgroup's name and for messages ("bundle", "type check", "database"). */
  readonly label: string;
  /** Node with a trusted script of the broker's (job-scripts.ts), or Deno. */
  readonly runtime: "node" | "deno";
  /** Node: the trusted script's host path, copied in read-only at JOB_SCRIPT. */
  readonly script?: string;
  /** The argv after the program (and the script); paths as `placed` gives them. */
  readonly args: readonly string[];
  readonly binds?: readonly JailBind[];
  /** More trusted files copied in read-only (a config, the native SQLite addon, esbuild's binary). */
  readonly files?: ReadonlyArray<{ readonly host: string; readonly jail: string }>;
  /** The memory bound: the cgroup's (satellite-sized) and RLIMIT_DATA. */
  readonly memoryBytes: number;
  /** CPUs it may use at once (the cgroup's quota); default one. */
  readonly cpus?: number;
  /** Default 64 MiB. */
  readonly tmpBytes?: number;
  /** Largest file it may write; default the jail's. */
  readonly fileBytes?: number;
  readonly env?: Readonly<Record<string, string>>;
  readonly jail: JailSetup;
  readonly sandbox: SandboxMode;
}

/** The default scratch space of a host-side job (Deno's type-check cache lives there). */
export const JOB_TMP_BYTES = 64 * 1024 * 1024;

/** A bind's path as the job sees it: the jail path, or the host path when there is no OS sandbox. */
export function placed(sandbox: SandboxMode, bind: { readonly host: string; readonly jail: string }): string {
  return sandbox === "none" ? bind.host : bind.jail;
}

/** The cgroup's bounds for a job: its memory, 128 tasks (esbuild's and Deno's threads), its CPUs. */
function jobLimits(job: HostJob): SatelliteLimits {
  return { memoryBytes: job.memoryBytes, pids: 128, cpuQuota: job.cpus ?? 1 };
}

interface Prepared {
  readonly launch: Launch;
  readonly cgroup: SatelliteCgroup | null;
  /** Removes what the job's launch needed on the host (its cgroup, its staging folder). */
  readonly cleanup: () => void;
}

/**
 * A root broker's binds, each with a placeholder in a fresh folder the jail uid can reach
 * (the launcher stages the host path onto it): its uid may have no path to the home.
 */
function stagedBinds(
  binds: readonly JailBind[],
  identity: JailIdentity | null,
): { binds: JailBind[]; dir: string | null } {
  if (identity === null || binds.length === 0) return { binds: [...binds], dir: null };
  const dir = makeSatelliteDir(identity);
  const staged = binds.map((bind, i) => {
    const placeholder = join(dir, `stage-${i}`);
    if (statSync(bind.host).isDirectory()) mkdirSync(placeholder, { mode: 0o755 });
    else writeFileSync(placeholder, "", { mode: 0o600 });
    return { ...bind, staged: placeholder };
  });
  return { binds: staged, dir };
}

function prepare(job: HostJob): Prepared {
  const identity = jailIdentity(job.jail.identity);
  const cgroup =
    job.sandbox === "bwrap" ? createSatelliteCgroup(`job-${job.label}`, jobLimits(job), job.jail.cgroup) : null;
  const staging = stagedBinds(job.sandbox === "bwrap" ? (job.binds ?? []) : [], identity);
  // With no OS sandbox there is no jail /tmp: a fresh folder stands in for it (Deno's cache included), gone after.
  const scratchHome = job.sandbox === "none" ? mkdtempSync(join(tmpdir(), "tether-job-home-")) : null;
  const cleanup = () => {
    void cgroup?.remove();
    if (staging.dir !== null) rmSync(staging.dir, { recursive: true, force: true });
    if (scratchHome !== null) rmSync(scratchHome, { recursive: true, force: true });
  };
  const deno = denoBinary(job.jail.deno);
  const node = process.execPath;
  const program =
    job.runtime === "node"
      ? [
          placed(job.sandbox, { host: node, jail: JOB_NODE }),
          placed(job.sandbox, { host: job.script ?? "", jail: JOB_SCRIPT }),
        ]
      : [placed(job.sandbox, { host: deno, jail: "/opt/tether/deno" })];
  const files = [
    ...(job.runtime === "node" ? [{ host: job.script ?? "", jail: JOB_SCRIPT }] : []),
    ...(job.files ?? []),
  ];
  const launch = launchCommand({
    sandbox: job.sandbox,
    deno,
    memoryMb: Math.ceil(job.memoryBytes / 2 ** 20),
    identity,
    cgroupProcs: cgroup?.procsFiles ?? [],
    seccomp: job.sandbox === "bwrap" ? seccompFilter(job.jail.nativeDir) : null,
    ...(job.jail.nativeDir !== undefined ? { nativeDir: job.jail.nativeDir } : {}),
    ...(job.runtime === "node" ? { runtime: { host: node, jail: JOB_NODE } } : {}),
    payload: [...program, ...job.args],
    extraFiles: job.sandbox === "bwrap" ? files : [],
    binds: staging.binds,
    tmpBytes: job.tmpBytes ?? JOB_TMP_BYTES,
    ...(job.fileBytes !== undefined ? { fileBytes: job.fileBytes } : {}),
    dataBytes: job.memoryBytes,
    env: { ...(scratchHome !== null ? { HOME: scratchHome, DENO_DIR: join(scratchHome, "deno") } : {}), ...job.env },
  });
  return { launch, cgroup, cleanup };
}

export type RunningJob = JailedChild;

/**
 * Starts a long-lived job (a database process): its stdin,
 * stdout and stderr are the caller's; `done` removes its cgroup.
 */
export function startHostJob(job: HostJob): { child: RunningJob; oomKilled: () => boolean; done: () => void } {
  const { launch, cgroup, cleanup } = prepare(job);
  let child: RunningJob;
  try {
    child = spawnJailed(launch);
  } catch (err) {
    cleanup();
    throw err;
  }
  return { child, oomKilled: () => cgroup?.oomKilled() === true, done: cleanup };
}

export interface JobResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  /** It ran past its time and was killed. */
  readonly timedOut: boolean;
  /** It wrote more than it may and was killed. */
  readonly overflowed: boolean;
  /** The kernel killed it for passing its memory bound. */
  readonly oomKilled: boolean;
  /** It never ran: why the process could not be started (no such file, no process left). */
  readonly startError?: string;
}

/** Runs a job to its end with `input` on stdin, at most `timeoutMs` and `maxOutputBytes` of stdout. */
export async function runHostJob(
  job: HostJob,
  input: string | Buffer,
  timeoutMs: number,
  maxOutputBytes: number,
): Promise<JobResult> {
  const notStarted = (err: unknown): JobResult => ({
    exitCode: null,
    signal: null,
    stdout: Buffer.alloc(0),
    stderr: "",
    timedOut: false,
    overflowed: false,
    oomKilled: false,
    startError: (err as Error).message,
  });
  let started: ReturnType<typeof startHostJob>;
  try {
    started = startHostJob(job);
  } catch (err) {
    return notStarted(err);
  }
  const { child, oomKilled, done } = started;
  // One buffer however the job splits its writes (`HeldBytes`).
  const stdout = new HeldBytes(maxOutputBytes);
  let overflowed = false;
  let timedOut = false;
  // The tail is what says why: the last STDERR_TAIL_BYTES, held in one buffer and cut back when full.
  const stderr = new HeldBytes(4 * STDERR_TAIL_BYTES);
  child.stdout?.on("data", (chunk: Buffer) => {
    if (overflowed || stdout.append(chunk)) return;
    overflowed = true;
    child.kill("SIGKILL");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.append(chunk)) return;
    const all = Buffer.concat([bufferOf(stderr.view()), chunk]);
    stderr.release();
    stderr.append(all.subarray(Math.max(0, all.length - STDERR_TAIL_BYTES)));
  });
  child.stdin?.on("error", () => {});
  child.stdin?.end(input);
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  try {
    let r: JailedExit;
    try {
      r = await child.exited;
    } catch (err) {
      return notStarted(err);
    }
    return {
      exitCode: r.exitCode,
      signal: r.signal,
      stdout: bufferOf(stdout.view()),
      stderr: tailOf(bufferOf(stderr.view())).toString("utf8"),
      timedOut,
      overflowed,
      oomKilled: oomKilled(),
    };
  } finally {
    clearTimeout(timer);
    done();
  }
}

/**
 * The same, synchronously (approval is synchronous: migrations). bwrap's options come
 * from a file of the broker's own, since nothing can write a pipe while spawnSync waits.
 */
export function runHostJobSync(job: HostJob, input: string, timeoutMs: number, maxOutputBytes: number): JobResult {
  const { launch, cgroup, cleanup } = prepare(job);
  const scratch = mkdtempSync(join(tmpdir(), "tether-job-"));
  const fds: number[] = [];
  try {
    let stdio: Array<"pipe" | number> = ["pipe", "pipe", "pipe"];
    if (launch.bwrapOptions !== null) {
      const options = join(scratch, "bwrap-args");
      writeFileSync(options, launch.bwrapOptions.map((a) => `${a}\0`).join(""), { mode: 0o600 });
      fds.push(openSync(options, "r"), ...launch.files.map((file) => openSync(file, "r")));
      stdio = ["pipe", "pipe", "pipe", ...fds];
    }
    const r: SpawnSyncReturns<Buffer> = spawnSync(launch.file, [...launch.args], {
      input,
      stdio,
      env: launch.env,
      timeout: timeoutMs,
      killSignal: "SIGKILL",
      maxBuffer: maxOutputBytes,
    });
    const code = (r.error as NodeJS.ErrnoException | undefined)?.code;
    return {
      exitCode: r.status,
      signal: r.signal,
      stdout: r.stdout ?? Buffer.alloc(0),
      stderr: (r.stderr ?? Buffer.alloc(0)).toString("utf8").slice(-65_536),
      timedOut: code === "ETIMEDOUT",
      overflowed: code === "ENOBUFS",
      oomKilled: cgroup?.oomKilled() === true,
    };
  } finally {
    for (const fd of fds) closeSync(fd);
    rmSync(scratch, { recursive: true, force: true });
    cleanup();
  }
}

/** One line saying why a job that should have answered did not. */
export function jobFailure(job: Pick<HostJob, "label">, r: JobResult, timeoutMs: number): string {
  if (r.startError !== undefined) return `the ${job.label} could not start: ${r.startError}`;
  if (r.timedOut) return `the ${job.label} did not finish within ${timeoutMs / 1000} s and was stopped`;
  if (r.overflowed) return `the ${job.label} wrote more output than the broker reads and was stopped`;
  if (r.oomKilled) return `the ${job.label} passed its memory bound and was stopped`;
  const tail = r.stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500);
  return `the ${job.label} failed (${r.signal ?? `exit ${r.exitCode}`})${tail !== "" ? `: ${tail}` : ""}`;
}
