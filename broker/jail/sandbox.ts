/**
 * The command line that starts a satellite inside both jail layers:
 * Deno's own permission flags, inside a bubblewrap namespace sandbox.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { BrokerCode, TetherError } from "../base/errors.js";
import { denoForJail, jailIdentity, type JailIdentity } from "./identity.js";
import { realPath, sharedLibraries } from "./libraries.js";
import { nativeDir, nativeProgram } from "./native/compile.js";

/** Which OS isolation layer is active. `none` is an explicit, insecure operator choice. */
export type SandboxMode = "bwrap" | "none";

/** Paths the satellite sees inside the sandbox. */
export const JAIL_DENO = "/opt/tether/deno";
export const JAIL_ARTIFACT = "/opt/tether/satellite.js";
export const JAIL_SOCKET_DIR = "/run/tether";
export const JAIL_SOCKET = `${JAIL_SOCKET_DIR}/s.sock`;

let bwrapPath: string | null | undefined;

/** The bubblewrap binary, or null when it is not installed. */
export function findBwrap(): string | null {
  if (bwrapPath !== undefined) return bwrapPath;
  for (const candidate of ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"]) {
    if (existsSync(candidate)) return (bwrapPath = candidate);
  }
  try {
    const found = execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).trim();
    return (bwrapPath = found || null);
  } catch {
    return (bwrapPath = null);
  }
}

/**
 * The sandbox mode to use: bwrap when installed; `none` only when the operator
 * asked for it (the `sandbox: "none"` option, which `TETHER_INSECURE_NO_SANDBOX=1`
 * sets for the tether command). Otherwise refuse.
 */
export function resolveSandbox(requested?: SandboxMode): SandboxMode {
  if (requested === "none") return "none";
  if (findBwrap() !== null) return "bwrap";
  throw new TetherError(
    BrokerCode.sandboxUnavailable,
    "bubblewrap (bwrap) is not installed, so satellites cannot be " +
      "jailed by the OS. Install it (apt-get install -y bubblewrap), " +
      "or set TETHER_INSECURE_NO_SANDBOX=1 to run with Deno's permissions alone (local files become importable)",
  );
}

/** A host path shown inside the jail. */
export interface JailBind {
  readonly host: string;
  readonly jail: string;
  /** Default read-only. */
  readonly writable?: boolean;
  /**
   * A root broker's jail uid may have no path to `host` (a 0700 home): a placeholder it
   * can reach, which the launcher, still root, bind-mounts `host` onto in a mount
   * namespace of its own before bwrap runs (jail-exec --stage).
   */
  readonly staged?: string;
}

export interface LaunchSpec {
  readonly sandbox: SandboxMode;
  readonly deno: string;
  /** The satellite's artifact (a satellite; a host-side job passes `payload` instead). */
  readonly artifact?: string;
  /** The satellite's own fresh directory holding its socket (a satellite only). */
  readonly socketDir?: string;
  readonly memoryMb: number;
  /** Deno's caches for this artifact, bound at /tmp/deno (bwrap only; see deno-cache.ts). */
  readonly denoCache?: { readonly dir: string; readonly writable: boolean } | null;
  /** Who the jail runs as on the host; null = the broker's own uid (it is not root). Default: jailIdentity(). */
  readonly identity?: JailIdentity | null;
  /** Where the launcher is compiled (see native/compile.ts); default build/native in the checkout. */
  readonly nativeDir?: string;
  /** cgroup.procs files the launcher joins before bwrap starts (see cgroup.ts). */
  readonly cgroupProcs?: readonly string[];
  /** The compiled seccomp filter (see seccomp.ts); null: none. */
  readonly seccomp?: string | null;
  /** What runs inside the jail instead of the satellite (host-side jobs, probes, tests): an argv of jail paths. */
  readonly payload?: readonly string[];
  /** More host files, copied read-only into the jail (job scripts, probes, tests). */
  readonly extraFiles?: ReadonlyArray<{ readonly host: string; readonly jail: string }>;
  /** Another program than Deno, bound with the libraries it links at `jail` (a host-side job's Node). */
  readonly runtime?: { readonly host: string; readonly jail: string };
  /** Host folders and files bound inside the jail (host-side jobs: the folder snapshot, the SDK, a database file). */
  readonly binds?: readonly JailBind[];
  /** Bytes of the jail's /tmp; default JAIL_TMP_BYTES. */
  readonly tmpBytes?: number;
  /** The largest file the jail may write (RLIMIT_FSIZE); default JAIL_FILE_BYTES. */
  readonly fileBytes?: number;
  /**
   * RLIMIT_DATA for everything in the jail; default none (a satellite
   * is bounded by V8's heap flag, its cgroup and the watchdog).
   */
  readonly dataBytes?: number;
  /** More environment for the payload (never inherited: only what is named here and the jail's own). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface Launch {
  /** The launcher (jail-exec), which closes every other descriptor, joins the cgroup, drops to the jail uid. */
  readonly file: string;
  /** The launcher's argv: its options, then the program (bwrap, or Deno with no sandbox). */
  readonly args: readonly string[];
  /**
   * bwrap's options, written NUL-separated to file descriptor 3 (`bwrap --args 3`):
   * then pid 1 inside the jail, whose /proc/1/cmdline the satellite can read,
   * names no host path. Null with no sandbox.
   */
  readonly bwrapOptions: readonly string[] | null;
  readonly env: Readonly<Record<string, string>>;
  /**
   * Host files and folders the child must get, opened for reading,
   * on the descriptors after 3 (bwrap copies or binds them).
   */
  readonly files: readonly string[];
}

/** Deno's cache databases a satellite gets a private copy of (see broker/jail/deno-cache.ts). */
export const DENO_CACHE_FILES = ["dep_analysis_cache_v2", "node_analysis_cache_v2", "v8_code_cache_v2"] as const;

/** Bytes of the jail's private /tmp (Deno's cache, localStorage): a bound, not a disk. */
export const JAIL_TMP_BYTES = 16 * 1024 * 1024;

/** The most a satellite's private copy of Deno's caches may take of its /tmp (and a warm-up may write per file). */
export const DENO_CACHE_MAX_BYTES = 4 * 1024 * 1024;

/** The largest file anything in a jail may write (RLIMIT_FSIZE): the warm-up's host-side cache files included. */
export const JAIL_FILE_BYTES = JAIL_TMP_BYTES;

/** Processes and threads of the jail uid, all satellites together (RLIMIT_NPROC; the cgroup bounds each one). */
export const JAIL_NPROC = 4096;

/**
 * MiB per semi-space of a satellite's young generation. V8 sizes it from the old
 * space (memory_mb / 128: 512 KiB at 64 MiB), so a call that moves 64 KiB ran a
 * scavenge once or twice per call and spent over half its CPU collecting; 2 MiB
 * halved a 64 KiB call's CPU. The young generation is at most three of these,
 * inside the RSS bound (2 × memory_mb + 128 MiB, satellite/memory-watch.ts).
 */
export function semiSpaceMb(memoryMb: number): number {
  return Math.min(16, Math.max(2, Math.round(memoryMb / 32)));
}

/** The Deno half of the jail: `run` and its flags, for `artifact` connecting to `socket`. */
export function denoRunArgs(artifact: string, socket: string, memoryMb: number): string[] {
  return [
    "run",
    "--no-prompt",
    "--no-config",
    "--no-lock",
    "--no-remote",
    "--no-npm",
    `--allow-net=unix:${socket}`,
    `--allow-read=${socket}`,
    `--allow-write=${socket}`,
    `--v8-flags=--max-old-space-size=${memoryMb},--max-semi-space-size=${semiSpaceMb(memoryMb)}`,
    artifact,
    socket,
  ];
}

// The child's whole environment: nothing inherited, so DENO_PERMISSION_BROKER_PATH,
// DENO_V8_FLAGS, proxies and secrets in the broker's environment never reach it.
const CHILD_ENV = { HOME: "/tmp", DENO_DIR: "/tmp/deno", NO_COLOR: "1", PATH: "/nonexistent" } as const;

/**
 * /proc entries a container runtime masks (runc's and Docker's defaults): kernel
 * memory, keys, timers and scheduler internals, hardware; and the host kernel's
 * command line, version and boot id. Files are covered with
 * /dev/null, folders with an empty read-only tmpfs; bwrap itself already makes
 * /proc/sys, sysrq-trigger, irq and bus read-only. Only what exists here is masked
 * (a bind needs its target).
 */
export const PROC_MASKED_FILES = [
  "kcore",
  "keys",
  "key-users",
  "kallsyms",
  "timer_list",
  "timer_stats",
  "sched_debug",
  "latency_stats",
  "interrupts",
  "kpagecount",
  "kpageflags",
  "kpagecgroup",
  "vmallocinfo",
  "sysrq-trigger",
  "config.gz",
  "modules",
  // The host's kernel and boot, which a host-side job (deno check quotes what
  // it reads) must not show: no Deno permission stands before them there.
  "cmdline",
  "version",
  "version_signature",
  "sys/kernel/random/boot_id",
  "sys/kernel/osrelease",
  "sys/kernel/version",
] as const;
export const PROC_MASKED_DIRS = [
  "acpi",
  "asound",
  "scsi",
  "fs",
  "driver",
  "tty",
  "bus",
  "irq",
  "dynamic_debug",
  "pressure",
] as const;

let procMasks: { files: string[]; dirs: string[] } | undefined;
function existingProcMasks(): { files: string[]; dirs: string[] } {
  procMasks ??= {
    files: PROC_MASKED_FILES.filter((f) => existsSync(`/proc/${f}`)),
    dirs: PROC_MASKED_DIRS.filter((d) => existsSync(`/proc/${d}`)),
  };
  return procMasks;
}

/** The satellite's own payload: Deno running its artifact against its socket. */
function satellitePayload(spec: LaunchSpec, deno: string, artifact: string, socket: string): string[] {
  if (spec.artifact === undefined || spec.socketDir === undefined)
    throw new TypeError("a launch without a payload needs an artifact and a socket folder");
  return [deno, ...denoRunArgs(artifact, socket, spec.memoryMb)];
}

/** Builds the command line for one satellite (or, with `payload`, for a host-side job or a probe in the same jail). */
export function launchCommand(spec: LaunchSpec): Launch {
  const identity = spec.identity === undefined ? jailIdentity() : spec.identity;
  const launcher = (program: readonly string[], keep: number, fsize: number): string[] => {
    const args = ["--keep", String(keep)];
    for (const procs of spec.cgroupProcs ?? []) args.push("--cgroup", procs);
    args.push("--fsize", String(fsize));
    if (spec.dataBytes !== undefined) args.push("--data", String(spec.dataBytes));
    for (const bind of spec.sandbox === "bwrap" ? (spec.binds ?? []) : [])
      if (bind.staged !== undefined) args.push("--stage", bind.host, bind.staged);
    if (identity !== null && spec.sandbox === "bwrap")
      args.push("--uid", String(identity.uid), "--gid", String(identity.gid), "--nproc", String(JAIL_NPROC));
    return [...args, "--", ...program];
  };
  const fileBytes = spec.fileBytes ?? JAIL_FILE_BYTES;
  if (spec.sandbox === "none") {
    const program = spec.payload ?? satellitePayload(spec, spec.deno, spec.artifact ?? "", `${spec.socketDir}/s.sock`);
    const home = spec.socketDir ?? tmpdir();
    return {
      file: nativeProgram("jail-exec", spec.nativeDir),
      args: launcher(program, 3, fileBytes),
      bwrapOptions: null,
      env: { ...CHILD_ENV, HOME: home, DENO_DIR: `${home}/deno`, ...spec.env },
      files: [],
    };
  }
  const bwrap = findBwrap();
  if (bwrap === null) throw new TetherError(BrokerCode.sandboxUnavailable, "bubblewrap (bwrap) is not installed");
  const files: string[] = [];
  /** The descriptor the next passed file will have in the child (0-2 stdio, 3 bwrap's options). */
  const passFile = (host: string): string => String(4 + files.push(host) - 1);

  const args: string[] = [
    "--unshare-all",
    // Explicit: needed by --disable-userns (--unshare-all only tries it).
    "--unshare-user",
    // The jail's own UTS namespace says its own name, not the host's.
    "--hostname",
    "tether",
    "--die-with-parent",
    "--new-session",
    "--clearenv",
    "--cap-drop",
    "ALL",
    // No user namespaces inside: nothing in the jail can make itself root of a new one.
    "--disable-userns",
    "--proc",
    "/proc",
    // Kernel settings stay read-only even if the jail's uid 0 is the host's root.
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
  ];
  const masks = existingProcMasks();
  for (const file of masks.files) args.push("--ro-bind", "/dev/null", `/proc/${file}`);
  for (const dir of masks.dirs)
    args.push("--perms", "0555", "--size", "4096", "--tmpfs", `/proc/${dir}`, "--remount-ro", `/proc/${dir}`);
  args.push("--dev", "/dev", "--size", String(spec.tmpBytes ?? JAIL_TMP_BYTES), "--tmpfs", "/tmp");
  const runtime = spec.runtime ?? { host: spec.deno, jail: JAIL_DENO };
  for (const lib of sharedLibraries(runtime.host, nativeDir(spec.nativeDir)))
    args.push("--ro-bind", realPath(lib), lib);
  args.push("--ro-bind", denoForJail(runtime.host, identity), runtime.jail);
  // The artifact is copied in from a descriptor the broker opened: the jail's uid needs no path to it.
  if (spec.artifact !== undefined) args.push("--ro-bind-data", passFile(spec.artifact), JAIL_ARTIFACT);
  // Only the socket itself is bound, not its directory: once the broker unlinks
  // the host path, nothing the satellite does at that path reaches the host.
  if (spec.socketDir !== undefined) args.push("--bind", `${spec.socketDir}/s.sock`, JAIL_SOCKET);
  for (const extra of spec.extraFiles ?? [])
    args.push("--perms", "0555", "--ro-bind-data", passFile(extra.host), extra.jail);
  // Host-side jobs' folders and files, each at its jail path (by its staged placeholder under a root broker).
  for (const bind of spec.binds ?? [])
    args.push(bind.writable === true ? "--bind" : "--ro-bind", bind.staged ?? bind.host, bind.jail);
  // Deno opens its caches read-write (read-only, it silently falls back to none), so each
  // satellite gets a private copy in its own /tmp; only the one warm-up boot writes the original.
  let fsize = fileBytes;
  if (spec.denoCache?.writable === true) {
    // The warm-up: only the cache files themselves reach the host, each bounded by the
    // launcher's file size limit, and DENO_DIR stays on the bounded tmpfs — localStorage
    // and the Cache API need no permission, and must not write to the host's disk.
    args.push("--dir", CHILD_ENV.DENO_DIR);
    for (const name of DENO_CACHE_FILES) {
      for (const file of [name, `${name}-wal`, `${name}-shm`])
        args.push("--bind", `${spec.denoCache.dir}/${file}`, `${CHILD_ENV.DENO_DIR}/${file}`);
    }
    fsize = DENO_CACHE_MAX_BYTES;
  } else if (spec.denoCache) {
    args.push("--dir", CHILD_ENV.DENO_DIR);
    for (const name of DENO_CACHE_FILES) {
      const host = `${spec.denoCache.dir}/${name}`;
      if (existsSync(host)) args.push("--file", passFile(host), `${CHILD_ENV.DENO_DIR}/${name}`);
    }
  }
  if (spec.seccomp) args.push("--seccomp", passFile(spec.seccomp));
  // Last: everything bwrap made outside /tmp becomes read-only (its root and /dev are unsized tmpfs).
  args.push("--remount-ro", "/dev", "--remount-ro", "/");
  for (const [key, value] of Object.entries({ ...CHILD_ENV, ...spec.env })) args.push("--setenv", key, value);
  args.push("--chdir", "/tmp");
  const payload = spec.payload ?? satellitePayload(spec, JAIL_DENO, JAIL_ARTIFACT, JAIL_SOCKET);
  return {
    file: nativeProgram("jail-exec", spec.nativeDir),
    args: launcher([bwrap, "--args", "3", "--", ...payload], 4 + files.length, fsize),
    bwrapOptions: args,
    env: {},
    files,
  };
}
