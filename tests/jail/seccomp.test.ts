/**
 * Proof that the jail's seccomp filter applies: broker/jail/native/syscall-probe.c
 * makes every call of the policy (probes generated from broker/jail/seccomp-policy.ts:
 * every rule, every socket family) inside a satellite's own jail (launchCommand and
 * spawnJailed, with `payload`), from a root broker (the jail then runs as the jail uid)
 * and from an unprivileged one (uid 65534), three ways:
 *   control  — no filter: the kernel's own answers, as the policy records them;
 *   marked   — the policy with its errnos replaced by MARK, which the kernel never
 *              answers: each denied call answering MARK proves its rule matched;
 *   filtered — the production filter: the policy's errnos, and Seccomp: 2.
 * Calls a rule must not match answer as in the control. Then a real Deno runs
 * under the production filter (a Worker, a timer, a Unix socket).
 *
 * TETHER_SECCOMP_TABLE=<file> writes the control/marked/filtered table there.
 */
import { chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { nativeProgram } from "../../broker/jail/native/compile.js";
import { reachableByOthers, makeSatelliteDir, type JailIdentity } from "../../broker/jail/identity.js";
import { launchCommand } from "../../broker/jail/sandbox.js";
import { spawnJailed } from "../../broker/jail/spawn.js";
import { seccompFilter, seccompFilterMarkedForProof, seccompSyscallNumbers } from "../../broker/jail/seccomp.js";
import { envJail, envJailIdentity } from "../support/env-options.js";
import {
  FOREIGN_ABI_PROBES,
  KEPT_ALLOWED,
  SECCOMP_RULES,
  type Answer,
  type Condition,
  type ProbeArg,
  type Rule,
} from "../../broker/jail/seccomp-policy.js";

/** An errno no syscall answers by itself (the kernel caps seccomp's errno at 4095). */
const MARK = 4000;
const MARK_ANSWER = `errno ${MARK}`;
const JAIL_PROBE = "/opt/tether/probe";

// Run as root, the suite plays both brokers; run unprivileged (make test's second pass), it is the second itself.
const ALL_USERS = ["root", "nobody"] as const;
const AS_ROOT = process.getuid?.() === 0;
// Playing the unprivileged broker needs a checkout others can reach (a fresh `mktemp -d` clone is
// private); make test's unprivileged pass covers that broker from a copy then.
const NOBODY_REACHES = reachableByOthers(denoBinary(envJail().deno));
const USERS: ReadonlyArray<(typeof ALL_USERS)[number]> = AS_ROOT ? (NOBODY_REACHES ? ALL_USERS : ["root"]) : ["nobody"];
const MODES = ["control", "marked", "filtered"] as const;
type User = (typeof ALL_USERS)[number];
type Mode = (typeof MODES)[number];

/** One call the probe makes. */
interface Call {
  readonly id: string;
  readonly syscall: string;
  readonly nr: string;
  readonly args: readonly ProbeArg[];
  readonly kernel: readonly Answer[];
  /** The rule it was written for (none: a call the policy must leave alone, or a foreign ABI). */
  readonly rule: Rule | null;
  readonly foreign: boolean;
}

interface Run {
  readonly status: Readonly<Record<string, string>>;
  readonly answers: ReadonlyMap<string, Answer>;
  readonly stderr: string;
}

const ERRNO_NAMES = new Map<number, string>();
for (const [name, n] of Object.entries(constants.errno)) if (!ERRNO_NAMES.has(n)) ERRNO_NAMES.set(n, name);
// Node lists EWOULDBLOCK/ENOTSUP first for these numbers; the kernel's names are these.
ERRNO_NAMES.set(constants.errno.EAGAIN, "EAGAIN").set(constants.errno.EOPNOTSUPP, "EOPNOTSUPP");
// Linux errnos Node does not list.
ERRNO_NAMES.set(94, "ESOCKTNOSUPPORT").set(96, "EPFNOSUPPORT");
const SIGNAL_NAMES = new Map<number, string>(Object.entries(constants.signals).map(([name, n]) => [n, name]));

function answerOf(raw: string): Answer {
  if (raw === "0") return "OK";
  if (raw.startsWith("sig")) return SIGNAL_NAMES.get(Number(raw.slice(3))) ?? raw;
  const n = Number(raw);
  return ERRNO_NAMES.get(n) ?? `errno ${n}`;
}

/** Every call, generated from the policy: each rule's probes (sweeps expanded), the calls it must leave alone, foreign ABIs. */
function generateCalls(numbers: Readonly<Record<string, number>>): Call[] {
  const nrOf = (syscall: string): string => {
    const nr = numbers[syscall];
    if (nr === undefined) throw new Error(`no syscall number for ${syscall}`);
    return String(nr);
  };
  const calls: Call[] = [];
  for (const rule of SECCOMP_RULES) {
    for (const p of rule.probes) {
      const base = { syscall: rule.syscall, nr: p.nr ?? nrOf(rule.syscall), rule, foreign: false };
      if (!p.sweep) {
        calls.push({ ...base, id: p.id, args: p.args, kernel: p.kernel });
        continue;
      }
      for (let v = p.sweep.from; v <= p.sweep.to; v++) {
        const args = p.args.map((a, i) => (i === p.sweep!.arg ? v : a));
        calls.push({ ...base, id: `${p.id}-${v}`, args, kernel: p.sweep.except[v] ?? p.kernel });
      }
    }
  }
  for (const kept of KEPT_ALLOWED) {
    for (const p of kept.probes)
      calls.push({
        id: p.id,
        syscall: kept.syscall,
        nr: p.nr ?? nrOf(kept.syscall),
        args: p.args,
        kernel: p.kernel,
        rule: null,
        foreign: false,
      });
  }
  for (const p of FOREIGN_ABI_PROBES)
    calls.push({ id: p.id, syscall: p.id, nr: p.nr!, args: p.args, kernel: p.kernel, rule: null, foreign: true });
  const ids = new Set(calls.map((c) => c.id));
  if (ids.size !== calls.length) throw new Error("probe ids are not unique");
  return calls;
}

function line(c: Call): string {
  return [c.id, c.nr, ...c.args.map((a) => (a === "buf" ? a : a < 0 ? String(a) : `0x${a.toString(16)}`))].join(" ");
}

/** The oracle: does this condition hold for these (64-bit) arguments, as the kernel's BPF sees them? */
function holds(cond: Condition, args: readonly ProbeArg[]): boolean {
  const raw = args[cond.arg] ?? 0;
  if (raw === "buf") throw new Error("a condition on a pointer argument cannot be probed");
  const v = BigInt.asUintN(64, BigInt(raw));
  switch (cond.op) {
    case "EQ":
      return v === BigInt(cond.value);
    case "NE":
      return v !== BigInt(cond.value);
    case "MASKED_EQ":
      return (v & BigInt(cond.mask)) === BigInt(cond.value);
    case "ANY_BIT":
      return (v & BigInt(cond.mask)) !== 0n;
    case "NOT_IN_32":
      return !cond.values.includes(Number(v & 0xffffffffn));
  }
}

/** The rules that deny this call (the same syscall, every condition holding). */
function denying(c: Call): Rule[] {
  if (c.foreign) return [];
  return SECCOMP_RULES.filter((r) => r.syscall === c.syscall && (r.when ?? []).every((cond) => holds(cond, c.args)));
}

/** What the call must answer in `mode`, given the control's answer. */
function expected(c: Call, mode: Mode, control: Answer): Answer {
  if (mode === "control") return control;
  // A foreign ABI is killed, unless this kernel has no entry for it at all (then no filter sees the call).
  if (c.foreign) return control === "SIGSEGV" ? control : "SIGSYS";
  const rules = denying(c);
  if (rules.length === 0) return control;
  const errno = rules[0]!.errno;
  if (rules.some((r) => r.errno !== errno)) throw new Error(`${c.id}: rules disagree on the errno`);
  return mode === "marked" && errno !== "ENOSYS" ? MARK_ANSWER : errno;
}

/** Mismatches of `run` against what `mode` must answer (control answers from `control`). */
function mismatches(calls: readonly Call[], mode: Mode, control: Run, run: Run): string[] {
  const out: string[] = [];
  for (const c of calls) {
    const base = control.answers.get(c.id);
    const got = run.answers.get(c.id);
    if (base === undefined || got === undefined) {
      out.push(`${c.id}: no answer`);
      continue;
    }
    const want = expected(c, mode, base);
    if (got !== want) out.push(`${c.id}: ${got}, want ${want}`);
  }
  return out;
}

/**
 * The two brokers: root (the launcher drops the jail to the unprivileged jail uid before
 * bwrap, as a root broker does), and a broker that is itself unprivileged (uid 65534 via
 * setpriv; the jail is that uid, in bwrap's unprivileged user namespace).
 */
const NOBODY = 65534;
const SETPRIV = "/usr/bin/setpriv";
const AS_NOBODY = ["--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups", "--"];
const identityOf = (user: User): JailIdentity | null => (user === "root" ? envJailIdentity() : null);

let workDir: string;
const servers: Server[] = [];
const socketDirs = new Map<User, string>();
let probeBinary: string;
let calls: Call[];
const runs = new Map<string, Run>();
const runOf = (user: User, mode: Mode): Run => runs.get(`${user}/${mode}`)!;

/** A satellite's socket folder for `user`, with a listener that answers "pong:<what it got>". */
async function socketDir(user: User): Promise<string> {
  const identity = identityOf(user);
  const dir = makeSatelliteDir(identity);
  const socket = join(dir, "s.sock");
  const server = createServer((sock) => sock.on("data", (d) => sock.end(`pong:${d.toString()}`)));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  if (AS_ROOT) {
    const owner = identity ?? { uid: NOBODY, gid: NOBODY };
    chownSync(dir, owner.uid, owner.gid);
    chownSync(socket, owner.uid, owner.gid);
  }
  return dir;
}

/**
 * Runs `payload` in a satellite's own jail (launchCommand and spawnJailed: jail-exec, bwrap
 * with its options on fd 3, the filter as `--seccomp N` on a descriptor after it), feeding it `stdin`.
 */
async function runJailed(
  user: User,
  filter: string | null,
  payload: readonly string[],
  extraFiles: Array<{ host: string; jail: string }>,
  stdin: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const launch = launchCommand({
    sandbox: "bwrap",
    deno: denoBinary(envJail().deno),
    nativeDir: envJail().nativeDir,
    artifact: join(workDir, "artifact.js"),
    socketDir: socketDirs.get(user)!,
    memoryMb: 64,
    identity: identityOf(user),
    seccomp: filter,
    payload,
    extraFiles,
  });
  const child = spawnJailed(
    user === "root" || !AS_ROOT
      ? launch
      : { ...launch, file: SETPRIV, args: [...AS_NOBODY, launch.file, ...launch.args] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdin?.on("error", () => {}); // a jail that dies early closes its stdin first
  child.stdin?.end(stdin);
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const result = await child.exited;
  clearTimeout(timer);
  return { code: result.exitCode, stdout, stderr };
}

async function probe(user: User, filter: string | null): Promise<Run> {
  const { code, stdout, stderr } = await runJailed(
    user,
    filter,
    [JAIL_PROBE],
    [{ host: probeBinary, jail: JAIL_PROBE }],
    `${calls.map(line).join("\n")}\n`,
  );
  if (code !== 0) throw new Error(`the probe exited ${code}: ${stderr}`);
  const status: Record<string, string> = {};
  const answers = new Map<string, Answer>();
  for (const l of stdout.split("\n")) {
    const m = /^status (\w+):\s*(\S+)/.exec(l);
    if (m) status[m[1]!] = m[2]!;
    else if (l.trim() !== "") {
      const [id, raw] = l.split(" ");
      answers.set(id!, answerOf(raw!));
    }
  }
  return { status, answers, stderr };
}

function writeTable(path: string): void {
  const rows = calls.map((c) => {
    const cells = USERS.flatMap((u) => MODES.map((m) => runOf(u, m).answers.get(c.id) ?? "-"));
    return `| ${c.id} | ${cells.join(" | ")} |`;
  });
  const head = `| call | ${USERS.flatMap((u) => MODES.map((m) => `${u} ${m}`)).join(" | ")} |`;
  writeFileSync(path, `${[head, `|${"---|".repeat(1 + USERS.length * MODES.length)}`, ...rows].join("\n")}\n`);
}

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "tether-seccomp-"));
  writeFileSync(join(workDir, "artifact.js"), "");
  for (const user of USERS) socketDirs.set(user, await socketDir(user));
  probeBinary = nativeProgram("syscall-probe", envJail().nativeDir);
  calls = generateCalls(seccompSyscallNumbers());
  const filters: Record<Mode, string | null> = {
    control: null,
    marked: seccompFilterMarkedForProof(MARK, envJail().nativeDir),
    filtered: seccompFilter(envJail().nativeDir),
  };
  // Independent jails: run at once.
  const keys = USERS.flatMap((user) => MODES.map((mode) => [user, mode] as const));
  const done = await Promise.all(keys.map(([user, mode]) => probe(user, filters[mode])));
  keys.forEach(([user, mode], i) => runs.set(`${user}/${mode}`, done[i]!));
  if (process.env.TETHER_SECCOMP_TABLE) writeTable(process.env.TETHER_SECCOMP_TABLE);
}, 120_000);

afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  for (const dir of [workDir, ...socketDirs.values()]) if (dir) rmSync(dir, { recursive: true, force: true });
});

test("S01-control: without the filter the kernel answers every probe as the policy records (nothing filtered, Seccomp: 0)", () => {
  for (const user of USERS) {
    const control = runOf(user, "control");
    expect(control.status.Seccomp).toBe("0");
    const wrong = calls
      .filter((c) => !c.kernel.includes(control.answers.get(c.id) ?? "-"))
      .map((c) => `${c.id}: ${control.answers.get(c.id)}, recorded ${c.kernel.join("|")}`);
    expect({ user, wrong }).toEqual({ user, wrong: [] });
  }
});

test("S02-status: bwrap --seccomp installs the filter: Seccomp: 2 and at least one filter in /proc/self/status", () => {
  for (const user of USERS) {
    for (const mode of ["marked", "filtered"] as const) {
      const { status } = runOf(user, mode);
      expect({ user, mode, seccomp: status.Seccomp }).toEqual({ user, mode, seccomp: "2" });
      expect(Number(status.Seccomp_filters)).toBeGreaterThanOrEqual(1);
    }
  }
});

test("S03-generated: every rule has a probe it denies, every socket family is probed, and every call was answered", () => {
  for (const rule of SECCOMP_RULES) {
    expect({ rule: rule.syscall, denied: calls.some((c) => c.rule === rule && denying(c).includes(rule)) }).toEqual({
      rule: rule.syscall,
      denied: true,
    });
  }
  for (const syscall of ["socket", "socketpair"]) {
    for (const type of ["stream", "dgram"]) {
      for (let family = 0; family <= 45; family++)
        expect(calls.some((c) => c.id === `${syscall}-${type}-${family}`)).toBe(true);
    }
  }
  for (const run of runs.values()) expect(calls.filter((c) => !run.answers.has(c.id)).map((c) => c.id)).toEqual([]);
});

test("S04-fails-without-filter: the marked checks refuse the unfiltered run for every rule (so the proof can fail)", () => {
  for (const user of USERS) {
    const control = runOf(user, "control");
    const wrong = new Set(mismatches(calls, "marked", control, control).map((w) => w.split(":")[0]!));
    const missed = SECCOMP_RULES.filter((rule) => !calls.some((c) => c.rule === rule && wrong.has(c.id))).map(
      (r) => r.syscall,
    );
    expect({ user, missed }).toEqual({ user, missed: [] });
  }
});

test("S05-kept: membarrier, rseq, pkey_alloc, close_range and memfd_create answer as without the filter", () => {
  const kept = calls.filter((c) => c.rule === null && !c.foreign);
  expect(kept.length).toBe(KEPT_ALLOWED.reduce((n, k) => n + k.probes.length, 0));
  for (const user of USERS) {
    for (const mode of ["marked", "filtered"] as const)
      expect({ user, mode, wrong: mismatches(kept, mode, runOf(user, "control"), runOf(user, mode)) }).toEqual({
        user,
        mode,
        wrong: [],
      });
  }
});

test("S06-foreign-abi: an x32 call (and an i386 int 0x80, where the kernel serves one) is killed with SIGSYS by the bad-arch action", () => {
  const foreign = calls.filter((c) => c.foreign);
  expect(foreign.length).toBe(FOREIGN_ABI_PROBES.length);
  for (const user of USERS) {
    for (const mode of ["marked", "filtered"] as const)
      expect({ user, mode, wrong: mismatches(foreign, mode, runOf(user, "control"), runOf(user, mode)) }).toEqual({
        user,
        mode,
        wrong: [],
      });
  }
});

test("S07-deno: a real Deno runs under the production filter (Worker, timer, Unix socket); TCP fails with EAFNOSUPPORT only when filtered", async () => {
  const code = `
    const status = await Deno.readTextFile("/proc/self/status");
    const seccomp = /^Seccomp:\\s*(\\d)/m.exec(status)?.[1];
    const worker = new Worker(URL.createObjectURL(new Blob(["self.onmessage = (e) => self.postMessage(e.data * 2)"])), { type: "module" });
    const doubled = await new Promise((r) => { worker.onmessage = (e) => r(e.data); worker.postMessage(21); });
    worker.terminate();
    const slept = await new Promise((r) => { const t0 = Date.now(); setTimeout(() => r(Date.now() - t0 >= 20), 25); });
    const conn = await Deno.connect({ transport: "unix", path: "/run/tether/s.sock" });
    await conn.write(new TextEncoder().encode("ping"));
    const buf = new Uint8Array(64);
    const reply = new TextDecoder().decode(buf.subarray(0, (await conn.read(buf)) ?? 0));
    conn.close();
    let tcp = "connected";
    try { (await Deno.connect({ hostname: "127.0.0.1", port: 9 })).close(); } catch (e) { tcp = e.message; }
    console.log(JSON.stringify({ seccomp, doubled, slept, reply, tcp }));
  `;
  const deno = ["/opt/tether/deno", "eval", "--no-config", "--no-lock", "--no-remote", "--no-npm", code];
  for (const user of USERS) {
    for (const filter of [null, seccompFilter(envJail().nativeDir)]) {
      const { code: exit, stdout, stderr } = await runJailed(user, filter, deno, [], "");
      expect({ user, filter, exit, stderr }).toEqual({ user, filter, exit: 0, stderr: "" });
      const seen = JSON.parse(stdout) as {
        seccomp: string;
        doubled: number;
        slept: boolean;
        reply: string;
        tcp: string;
      };
      expect(seen).toEqual({
        seccomp: filter === null ? "0" : "2",
        doubled: 42,
        slept: true,
        reply: "pong:ping",
        tcp: expect.stringContaining(filter === null ? "Connection refused" : "Address family not supported"),
      });
    }
  }
}, 60_000);

// One test per rule: both users, the control as recorded, the marked filter answering MARK
// (or ENOSYS), the production filter answering the rule's errno; calls it must not match, as without it.
const ruleSlugs = new Map<Rule, string>();
for (const rule of SECCOMP_RULES) {
  const twin = SECCOMP_RULES.filter((r) => r.syscall === rule.syscall).length > 1;
  ruleSlugs.set(rule, twin ? rule.probes[0]!.id : rule.syscall);
}
SECCOMP_RULES.forEach((rule, i) => {
  const nn = String(10 + i).padStart(2, "0");
  test(`S${nn}-${ruleSlugs.get(rule)}: ${rule.why} → ${rule.errno}`, () => {
    const own = calls.filter((c) => c.rule === rule);
    expect(own.length).toBeGreaterThan(0);
    for (const user of USERS) {
      const control = runOf(user, "control");
      for (const mode of ["marked", "filtered"] as const) {
        expect({ user, mode, wrong: mismatches(own, mode, control, runOf(user, mode)) }).toEqual({
          user,
          mode,
          wrong: [],
        });
      }
    }
  });
});
