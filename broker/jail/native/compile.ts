/**
 * The jail's two small native programs, compiled from C once per machine:
 * `jail-exec` (the launcher between the broker and bwrap: closes every
 * inherited descriptor, joins the satellite's cgroup, drops to the jail uid)
 * and `syscall-probe` (the escape suite's proof that the seccomp filter applies).
 *
 * Node cannot close descriptors it did not open, nor change a child's cgroup
 * before it runs; a C launcher can, in a few hundred microseconds. The binary
 * is keyed by its source's hash, written to a temporary name and renamed into
 * place, so two brokers compiling at once never run a half-written file.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerCode, TetherError } from "../../base/errors.js";

export type NativeProgram = "jail-exec" | "syscall-probe";

const HERE = dirname(fileURLToPath(import.meta.url));

/** The C sources: beside this file (also from dist/, where broker is compiled). */
function sourceOf(program: NativeProgram): string {
  for (const candidate of [join(HERE, `${program}.c`), join(ROOT, `broker/jail/native/${program}.c`)]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new TetherError(
    BrokerCode.sandboxUnavailable,
    `Cannot find the source of ${program} (${program}.c) beside the broker`,
  );
}

/** The checkout: three folders up from broker/jail/native (four from dist/broker/jail/native). */
const ROOT = resolve(HERE, HERE.split(sep).includes("dist") ? "../../../.." : "../../..");

/** Where compiled programs live: `explicit` (the broker's `nativeDir` option), else build/native in the checkout. */
export function nativeDir(explicit?: string): string {
  return explicit !== undefined && explicit !== "" ? explicit : join(ROOT, "build/native");
}

/**
 * Each program's source hash, read once: the sources ship with the broker and do not
 * change while it runs (an immutable fact of this install, like a constant).
 */
const sourceHashes = new Map<NativeProgram, { source: string; hash: string }>();

function sourceHash(program: NativeProgram): { source: string; hash: string } {
  let hit = sourceHashes.get(program);
  if (hit === undefined) {
    const source = sourceOf(program);
    hit = { source, hash: createHash("sha256").update(readFileSync(source)).digest("hex").slice(0, 16) };
    sourceHashes.set(program, hit);
  }
  return hit;
}

/**
 * The compiled program's path in `dir` (default nativeDir()),
 * compiling it first when this source was never compiled there.
 */
export function nativeProgram(program: NativeProgram, dir: string = nativeDir()): string {
  const { source, hash } = sourceHash(program);
  const binary = join(dir, `${program}-${hash}`);
  if (!existsSync(binary)) {
    // Readable and runnable by the jail's unprivileged uid too (the probe runs as it).
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    const scratch = `${binary}.${process.pid}.tmp`;
    try {
      execFileSync("cc", ["-O2", "-Wall", "-Werror", "-o", scratch, source], { stdio: ["ignore", "ignore", "pipe"] });
    } catch (err) {
      rmSync(scratch, { force: true });
      const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? "";
      const missing = (err as NodeJS.ErrnoException).code === "ENOENT";
      throw new TetherError(
        BrokerCode.sandboxUnavailable,
        missing
          ? `No C compiler: the jail launcher (${program}.c) needs one once per ` +
              `machine. Install it (apt-get install -y gcc libc6-dev) and try again`
          : `Compiling ${program}.c failed: ${stderr.slice(0, 2000)}`,
      );
    }
    chmodSync(scratch, 0o755);
    renameSync(scratch, binary);
  }
  return binary;
}
