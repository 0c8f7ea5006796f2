/**
 * The command line that starts a satellite inside both jail layers:
 * Deno's own permission flags, inside a bubblewrap namespace sandbox.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { BrokerCode, TetherError } from "../errors.js";
import { realPath, sharedLibraries } from "./libraries.js";

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
 * asked for it (`TETHER_INSECURE_NO_SANDBOX=1` or the option). Otherwise refuse.
 */
export function resolveSandbox(requested?: SandboxMode): SandboxMode {
  if (requested === "none" || process.env.TETHER_INSECURE_NO_SANDBOX === "1") return "none";
  if (findBwrap() !== null) return "bwrap";
  throw new TetherError(
    BrokerCode.sandboxUnavailable,
    "bubblewrap (bwrap) is not installed, so satellites cannot be jailed by the OS. Install it (apt-get install -y bubblewrap), " +
      "or set TETHER_INSECURE_NO_SANDBOX=1 to run with Deno's permissions alone (local files become importable)",
  );
}

export interface LaunchSpec {
  readonly sandbox: SandboxMode;
  readonly deno: string;
  readonly artifact: string;
  /** The satellite's own fresh directory holding its socket. */
  readonly socketDir: string;
  readonly memoryMb: number;
  /** Deno's caches for this artifact, bound at /tmp/deno (bwrap only; see deno-cache.ts). */
  readonly denoCache?: { readonly dir: string; readonly writable: boolean } | null;
}

export interface Launch {
  readonly file: string;
  /** The whole argument list. */
  readonly args: readonly string[];
  /**
   * True when the arguments should reach the program through file descriptor 3
   * (`bwrap --args 3`): then pid 1 inside the jail, whose /proc/1/cmdline the
   * satellite can read, names no host path.
   */
  readonly argsViaFd: boolean;
  readonly env: Readonly<Record<string, string>>;
  /** Host files the child must get on fds 4, 5, … (bwrap copies them into the jail: `--file`). */
  readonly files: readonly string[];
}

/** Deno's cache databases a satellite gets a private copy of (see broker/jail/deno-cache.ts). */
export const DENO_CACHE_FILES = ["dep_analysis_cache_v2", "node_analysis_cache_v2", "v8_code_cache_v2"] as const;

/** Bytes of the jail's private /tmp (Deno's cache, localStorage): a bound, not a disk. */
export const JAIL_TMP_BYTES = 16 * 1024 * 1024;

function denoArgs(deno: string, artifact: string, socket: string, memoryMb: number): string[] {
  return [deno, ...denoRunArgs(artifact, socket, memoryMb)];
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
    `--v8-flags=--max-old-space-size=${memoryMb}`,
    artifact,
    socket,
  ];
}

// The child's whole environment: nothing inherited, so DENO_PERMISSION_BROKER_PATH,
// DENO_V8_FLAGS, proxies and secrets in the broker's environment never reach it.
const CHILD_ENV = { HOME: "/tmp", DENO_DIR: "/tmp/deno", NO_COLOR: "1", PATH: "/nonexistent" } as const;

/** Builds the command line for one satellite. */
export function launchCommand(spec: LaunchSpec): Launch {
  if (spec.sandbox === "none") {
    const [file, ...args] = denoArgs(spec.deno, spec.artifact, `${spec.socketDir}/s.sock`, spec.memoryMb);
    return { file: file!, args, argsViaFd: false, env: { ...CHILD_ENV, HOME: spec.socketDir, DENO_DIR: `${spec.socketDir}/deno` }, files: [] };
  }
  const bwrap = findBwrap();
  if (bwrap === null) throw new TetherError(BrokerCode.sandboxUnavailable, "bubblewrap (bwrap) is not installed");
  const args: string[] = [
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--clearenv",
    "--cap-drop",
    "ALL",
    "--proc",
    "/proc",
    // Kernel settings stay read-only even if the jail's uid 0 is the host's root.
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
    "--dev",
    "/dev",
    "--size",
    String(JAIL_TMP_BYTES),
    "--tmpfs",
    "/tmp",
  ];
  for (const lib of sharedLibraries(spec.deno)) args.push("--ro-bind", realPath(lib), lib);
  // Only the socket itself is bound, not its directory: once the broker unlinks
  // the host path, nothing the satellite does at that path reaches the host.
  args.push("--ro-bind", spec.deno, JAIL_DENO, "--ro-bind", spec.artifact, JAIL_ARTIFACT, "--bind", `${spec.socketDir}/s.sock`, JAIL_SOCKET);
  // Deno opens its caches read-write (read-only, it silently falls back to none), so each
  // satellite gets a private copy in its own /tmp; only the one warm-up boot writes the original.
  const files: string[] = [];
  if (spec.denoCache?.writable === true) {
    // The warm-up: only the cache files themselves reach the host, and DENO_DIR stays on the
    // bounded tmpfs — localStorage and the Cache API need no permission, and must not write
    // to the host's disk without bound.
    args.push("--dir", CHILD_ENV.DENO_DIR);
    for (const name of DENO_CACHE_FILES) {
      for (const file of [name, `${name}-wal`, `${name}-shm`]) args.push("--bind", `${spec.denoCache.dir}/${file}`, `${CHILD_ENV.DENO_DIR}/${file}`);
    }
  } else if (spec.denoCache) {
    args.push("--dir", CHILD_ENV.DENO_DIR);
    for (const name of DENO_CACHE_FILES) {
      const host = `${spec.denoCache.dir}/${name}`;
      if (!existsSync(host)) continue;
      args.push("--file", String(4 + files.length), `${CHILD_ENV.DENO_DIR}/${name}`);
      files.push(host);
    }
  }
  for (const [key, value] of Object.entries(CHILD_ENV)) args.push("--setenv", key, value);
  args.push("--chdir", "/tmp", "--", ...denoArgs(JAIL_DENO, JAIL_ARTIFACT, JAIL_SOCKET, spec.memoryMb));
  return { file: bwrap, args, argsViaFd: true, env: {}, files };
}
