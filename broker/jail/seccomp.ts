/**
 * The jail's seccomp filter as a file bwrap can load (`--seccomp FD`): the
 * policy of seccomp-policy.ts compiled to raw BPF by seccomp-compile.py with
 * libseccomp, once per machine and policy.
 *
 * The BPF is keyed by the hash of what goes into it (the policy's JSON and the
 * compiler), kept beside the native programs, written to a temporary name and
 * renamed into place, so two brokers compiling at once never load half a file.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerCode, TetherError } from "../base/errors.js";
import { nativeDir } from "./native/compile.js";
import { KEPT_ALLOWED, SECCOMP_RULES } from "./seccomp-policy.js";

/** The system's python: Debian's python3-seccomp is not visible to a pyenv or venv python. */
const PYTHON = "/usr/bin/python3";
const INSTALL = "apt-get install -y python3-seccomp";
const HERE = dirname(fileURLToPath(import.meta.url));

/** The compiler script: beside this file, or in the checkout when running from dist/. */
function compilerPath(): string {
  for (const candidate of [
    join(HERE, "seccomp-compile.py"),
    resolve(HERE, "../../../broker/jail/seccomp-compile.py"),
  ]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new TetherError(BrokerCode.sandboxUnavailable, "Cannot find broker/jail/seccomp-compile.py beside the broker");
}

/** Only what shapes the filter: editing a probe does not change it. */
function policyJson(): string {
  return JSON.stringify({
    rules: SECCOMP_RULES.map(({ syscall, nr, errno, when }) => ({
      syscall,
      ...(nr ? { nr } : {}),
      errno,
      ...(when ? { when } : {}),
    })),
  });
}

function runCompiler(args: readonly string[], input: string): string {
  if (!existsSync(PYTHON)) {
    throw new TetherError(
      BrokerCode.sandboxUnavailable,
      `The seccomp filter is compiled with ${PYTHON} and ` +
        `libseccomp, and ${PYTHON} is missing. Install them: ${INSTALL}`,
    );
  }
  try {
    return execFileSync(PYTHON, [compilerPath(), ...args], {
      input,
      encoding: "utf8",
      stdio: ["pipe", "pipe", "pipe"],
      timeout: 30_000,
    });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "").trim();
    const missing = (err as { status?: number }).status === 3;
    throw new TetherError(
      BrokerCode.sandboxUnavailable,
      missing
        ? `libseccomp's Python module is missing for ${PYTHON}. Install it: ${INSTALL}`
        : `Compiling the seccomp filter failed: ${stderr.slice(0, 2000) || (err as Error).message}`,
    );
  }
}

/**
 * Filters already compiled, by folder and mark: each file is named by the hash of what
 * went into it and never changes once renamed into place, so the path is a fact of
 * this machine, not state of any broker.
 */
const compiled = new Map<string, string>();

function compile(mark: number | null, nativeDirOption?: string): string {
  const dir = nativeDir(nativeDirOption);
  const memo = `${dir}\0${mark ?? ""}`;
  const hit = compiled.get(memo);
  if (hit !== undefined) return hit;
  const input = policyJson();
  const hash = createHash("sha256").update(input).update(readFileSync(compilerPath())).digest("hex").slice(0, 16);
  const file = join(dir, mark === null ? `seccomp-${hash}.bpf` : `seccomp-${hash}-mark${mark}.bpf`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const scratch = `${file}.${process.pid}.tmp`;
    try {
      runCompiler(["--out", scratch, ...(mark === null ? [] : ["--mark-errno", String(mark)])], input);
      chmodSync(scratch, 0o644);
      renameSync(scratch, file);
    } finally {
      rmSync(scratch, { force: true });
    }
  }
  compiled.set(memo, file);
  return file;
}

/**
 * The compiled filter for the current policy, kept in `nativeDir` (the broker's option;
 * default beside the native programs): open it and pass the fd to bwrap as `--seccomp FD`.
 */
export function seccompFilter(nativeDir?: string): string {
  return compile(null, nativeDir);
}

/**
 * TEST AID, never for a satellite: the same policy with every errno but ENOSYS
 * replaced by `errno`, a value the kernel never answers by itself, so a probe
 * proves each rule matches (tests/jail/seccomp.test.ts).
 */
export function seccompFilterMarkedForProof(errno: number, nativeDir?: string): string {
  if (!Number.isInteger(errno) || errno < 1 || errno > 4095)
    throw new RangeError(`errno must be 1..4095, got ${errno}`);
  return compile(errno, nativeDir);
}

/** The native arch's number of every syscall the policy names (for the probe). */
export function seccompSyscallNumbers(): Readonly<Record<string, number>> {
  const input = JSON.stringify({
    rules: JSON.parse(policyJson()).rules,
    resolveOnly: KEPT_ALLOWED.map(({ syscall }) => ({ syscall })),
  });
  return JSON.parse(runCompiler(["--resolve"], input)) as Record<string, number>;
}

/** For `tether doctor`: can this machine build and apply the filter? */
export function seccompSupport(nativeDir?: string): { available: boolean; why?: string } {
  let status = "";
  try {
    status = readFileSync("/proc/self/status", "utf8");
  } catch {
    // Not Linux, or no /proc: said below.
  }
  if (!/^Seccomp:/m.test(status))
    return { available: false, why: "this kernel has no seccomp (no Seccomp: line in /proc/self/status)" };
  let actions = "errno kill_thread";
  try {
    actions = readFileSync("/proc/sys/kernel/seccomp/actions_avail", "utf8");
  } catch {
    // Older kernels do not list them; errno and kill_thread are as old as seccomp filters.
  }
  if (!/\berrno\b/.test(actions) || !/\bkill_thread\b/.test(actions))
    return {
      available: false,
      why: `this kernel's seccomp lacks the errno or kill_thread action (it has: ${actions.trim()})`,
    };
  try {
    seccompFilter(nativeDir);
  } catch (err) {
    return { available: false, why: (err as Error).message };
  }
  return { available: true };
}
