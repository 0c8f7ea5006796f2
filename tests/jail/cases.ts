/**
 * The jail escape suite's one table of cases: id → what is attempted → what
 * must refuse it → which layer refuses. docs/jail.md carries the same table
 * (a test keeps them in sync).
 *
 * Each check asserts the refusal itself (the error class and message, the
 * broker's answer, or what the host sees), never only that nothing succeeded.
 */
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { SatelliteSlot } from "../../broker/satellite/slot.js";
import { runWithOsLayerOnly } from "./support/os-layer.js";
import {
  attempt,
  environKeys,
  listing,
  mounts,
  namespace,
  procStatus,
  tree,
  type AttemptArgs,
  type HostFiles,
  type JailView,
  type Listeners,
  type Seen,
} from "./harness.js";

/**
 * Which layer refuses (for attempts on the shared satellite this is verified by
 * running the same attempt with no OS sandbox: see the control tests).
 * - deno: a Deno permission or flag refuses; plain Deno refuses it the same way.
 * - os: the bubblewrap sandbox refuses or hides it; plain Deno alone would not.
 * - broker: the broker's own handling (socket unlinked after hello, deadline, restart).
 * - nothing: a known escape (see `finding`).
 */
export type Layer = "deno" | "os" | "broker" | "nothing";

/** Where a case runs. */
export type Group =
  | "shared" //  one jailed satellite for most attempts
  | "host" //    no attempt: what the host sees of the shared satellite's jail
  | "literal" // a copy of the artifact with literal imports prepended (stands for a bundler bypass)
  | "socket" //  its own satellite: the broker's socket path
  | "env" //     its own satellite booted from a poisoned parent environment
  | "peer" //    two satellites at once
  | "crash" //   its own satellite, killed and replaced case after case
  | "bypass"; // the OS layer alone: the same bwrap jail around a Deno with --allow-all, as a Deno permission bypass would leave it

export type Verdict = "refused" | "contained" | "escaped";

/** What a check is given. */
export interface CaseEnv {
  readonly slot: SatelliteSlot;
  /** A second satellite of the same extension (peer group only). */
  readonly peer: SatelliteSlot | null;
  /** The host's view of `slot`'s jail; null when it runs with no sandbox (control runs). */
  readonly jail: JailView | null;
  readonly listeners: Listeners;
  readonly files: HostFiles;
  /** The bundled artifact on the host. */
  readonly artifact: string;
  readonly artifactCode: string;
  /** The slot's process and boot count just before the attempt. */
  readonly before: { readonly pid: number | undefined; readonly boots: number };
}

interface Common {
  readonly id: string;
  /** The attempt, in one sentence. */
  readonly title: string;
  /** What refuses it, as docs/jail.md shows it. */
  readonly refusal: string;
  readonly layer: Layer;
  readonly group: Group;
  readonly verdict: Verdict;
  /** A known escape, described in docs/jail.md ("Findings"). Its check states the secure behaviour and is expected to fail. */
  readonly finding?: string;
  /** When the finding only reproduces on some hosts: elsewhere the case is judged like any other (its check must pass). */
  readonly findingWhen?: () => boolean;
}

export interface AttemptCase extends Common {
  readonly kind: "attempt";
  readonly args?: (env: CaseEnv) => Omit<AttemptArgs, "id">;
  readonly deadlineMs?: number;
  /** How to attempt it when one call on `slot` is not enough. */
  readonly run?: (env: CaseEnv, args: AttemptArgs) => Promise<Seen>;
  readonly check: (seen: Seen, env: CaseEnv) => void | Promise<void>;
  /**
   * The same attempt on a satellite with no OS sandbox: "same" = the check
   * passes there too (Deno alone refuses); a function = what plain Deno does
   * instead; "skip" = not informative or not comparable.
   */
  readonly control?: "same" | "skip" | ((seen: Seen, env: CaseEnv) => void);
  /**
   * For a known escape (`finding`): asserts the escape exactly as documented.
   * The suite requires `check` to fail and `evidence` to pass, so the case
   * turns red the day the finding is fixed (then drop `finding` and this).
   */
  readonly evidence?: (seen: Seen, env: CaseEnv) => void;
}

export interface HostCase extends Common {
  readonly kind: "host";
  readonly inspect: (env: CaseEnv) => void | Promise<void>;
  /** For a known escape: as `AttemptCase.evidence`. */
  readonly evidence?: (env: CaseEnv) => void;
}

export type JailCase = AttemptCase | HostCase;

// ── expectation helpers ──────────────────────────────────────────────────

type PermKind = "read" | "write" | "net" | "env" | "run" | "ffi" | "sys";

/** Deno's permission message, exactly. */
export function permMessage(kind: PermKind, target?: string): string {
  return `Requires ${kind} access${target === undefined ? "" : ` to "${target}"`}, run again with the --allow-${kind} flag`;
}

function refusedWith(seen: Seen, name: string, message: string | RegExp): void {
  expect(seen).toEqual({
    answered: true,
    id: expect.any(String),
    obs: {
      outcome: "refused",
      error: { name, message: typeof message === "string" ? message : expect.stringMatching(message) },
    },
  });
}

const notCapable = (kind: PermKind, target?: string) => (seen: Seen) =>
  refusedWith(seen, "NotCapable", permMessage(kind, target));
/** A dynamic import() refused by Deno's read permission (it surfaces as a TypeError). */
const importDenied = (path: string) => (seen: Seen) => refusedWith(seen, "TypeError", permMessage("read", path));
const notFound = (op?: string) => (seen: Seen) =>
  refusedWith(
    seen,
    "NotFound",
    op === undefined
      ? "No such file or directory (os error 2)"
      : `No such file or directory (os error 2): ${op} '/run/tether/s.sock'`,
  );

function succeeded(seen: Seen): unknown {
  expect(seen).toMatchObject({ answered: true, obs: { outcome: "succeeded" } });
  return seen.answered && seen.obs.outcome === "succeeded" ? seen.obs.detail : undefined;
}

function observed(seen: Seen, detail: Record<string, unknown>): void {
  expect(seen).toEqual({ answered: true, id: expect.any(String), obs: { outcome: "observed", detail } });
}
const ok = (detail: unknown) => ({ outcome: "succeeded", detail });
const no = (name: string, message: string | RegExp) => ({
  outcome: "refused",
  error: { name, message: typeof message === "string" ? message : expect.stringMatching(message) },
});

function jail(env: CaseEnv): JailView {
  if (env.jail === null) throw new Error("this check needs the host's view of a jailed satellite");
  return env.jail;
}

/** After an attempt: the broker still serves the next call on the same slot. */
async function servedNext(env: CaseEnv, how: "same process" | "fresh process"): Promise<void> {
  const pong = await attempt(env.slot, { id: "ping" });
  expect(pong).toMatchObject({ answered: true, obs: { outcome: "succeeded" } });
  if (how === "same process") {
    expect(env.slot.process?.pid).toBe(env.before.pid);
    expect(env.slot.boots).toBe(env.before.boots);
  } else {
    expect(env.slot.process?.pid).not.toBe(env.before.pid);
    expect(env.slot.boots).toBe(env.before.boots + 1);
  }
}

const MODULE_NOT_FOUND = (url: string) => (seen: Seen) => refusedWith(seen, "TypeError", `Module not found "${url}".`);

/** What the literal import loaded in plain Deno (the control proves Deno itself does not gate it). */
const loadedDefault = (expected: unknown) => (seen: Seen) =>
  expect(seen).toEqual({
    answered: true,
    id: expect.any(String),
    obs: { outcome: "succeeded", detail: { keys: ["default"], default: expected } },
  });

// ── the table ────────────────────────────────────────────────────────────

const A = "attempt" as const;
const H = "host" as const;

export const CASES: readonly JailCase[] = [
  // Reading host files
  {
    kind: A,
    id: "J01-read-api",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.readTextFile("/etc/passwd")',
    refusal: 'NotCapable: Requires read access to "/etc/passwd"',
    check: notCapable("read", "/etc/passwd"),
  },
  {
    kind: A,
    id: "J02-fetch-file",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'fetch("file:///etc/passwd")',
    refusal: 'NotCapable: Requires read access to "/etc/passwd"',
    check: notCapable("read", "/etc/passwd"),
  },
  {
    kind: A,
    id: "J03-import-js",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of a JS module in a host temp dir (computed specifier)",
    refusal: 'TypeError: Requires read access to "<host tmp>/secret.js"',
    args: (env) => ({ path: env.files.js }),
    check: (seen, env) => importDenied(env.files.js)(seen),
  },
  {
    kind: A,
    id: "J04-import-json",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'import() of a host JSON file with { type: "json" }',
    refusal: 'TypeError: Requires read access to "<host tmp>/secret.json"',
    args: (env) => ({ path: env.files.json }),
    check: (seen, env) => importDenied(env.files.json)(seen),
  },
  {
    kind: A,
    id: "J05-import-text-passwd",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'import("file:///etc/passwd", { with: { type: "text" } })',
    refusal: 'TypeError: Requires read access to "/etc/passwd"',
    check: importDenied("/etc/passwd"),
  },
  {
    kind: A,
    id: "J06-import-text-hostname",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'import("file:///etc/hostname", { with: { type: "text" } })',
    refusal: 'TypeError: Requires read access to "/etc/hostname"',
    check: importDenied("/etc/hostname"),
  },
  {
    kind: A,
    id: "J07-import-relative",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of ../../etc/passwd relative to the artifact, as text",
    refusal: 'TypeError: Requires read access to "/etc/passwd"',
    check: importDenied("/etc/passwd"),
  },
  {
    kind: A,
    id: "J08-import-data-nested",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of a data: module whose static import is file:///etc/passwd as text",
    refusal: 'TypeError: Requires read access to "/etc/passwd"',
    check: importDenied("/etc/passwd"),
  },
  {
    kind: A,
    id: "J09-import-blob-nested",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of a blob: module that imports file:///etc/passwd as text",
    refusal: 'TypeError: Requires read access to "/etc/passwd"',
    check: importDenied("/etc/passwd"),
  },
  {
    kind: A,
    id: "J10-import-eval",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of file:///etc/passwd from eval'd code (a literal specifier Deno's graph never sees)",
    refusal: 'TypeError: Requires read access to "/etc/passwd"',
    check: importDenied("/etc/passwd"),
  },
  {
    kind: A,
    id: "J11-literal-text-passwd",
    group: "literal",
    layer: "os",
    verdict: "refused",
    title: "a literal import of file:///etc/passwd as text in the artifact itself (past the bundler)",
    refusal: 'TypeError: Module not found "file:///etc/passwd" (plain Deno returns the file)',
    check: MODULE_NOT_FOUND("file:///etc/passwd"),
    control: loadedDefault(readFileSync("/etc/passwd", "utf8").slice(0, 4000)),
  },
  {
    kind: A,
    id: "J12-literal-json",
    group: "literal",
    layer: "os",
    verdict: "refused",
    title: 'a literal import of a host JSON file (with { type: "json" }) in the artifact itself',
    refusal: 'TypeError: Module not found "file://<host tmp>/secret.json" (plain Deno returns it)',
    check: (seen, env) => MODULE_NOT_FOUND(`file://${env.files.json}`)(seen),
    control: (seen, env) => loadedDefault(JSON.parse(env.files.jsonText))(seen),
  },
  {
    kind: A,
    id: "J13-literal-js",
    group: "literal",
    layer: "os",
    verdict: "refused",
    title: "a literal import of a host JS module in the artifact itself",
    refusal: 'TypeError: Module not found "file://<host tmp>/secret.js" (plain Deno runs it)',
    check: (seen, env) => MODULE_NOT_FOUND(`file://${env.files.js}`)(seen),
    control: loadedDefault("host js, never for the jail"),
  },
  {
    kind: A,
    id: "J14-literal-proc-cmdline",
    group: "literal",
    layer: "os",
    verdict: "contained",
    title: "a literal import of file:///proc/1/cmdline as text in the artifact itself",
    refusal:
      "contained: pid 1 in the jail is bwrap, given its options on fd 3 (--args), so its command line names only jail paths (fixed F3)",
    check: (seen, env) => {
      // Secure: refused, or readable but naming no host path.
      if (seen.answered && seen.obs.outcome === "refused") return;
      const text = JSON.stringify(seen);
      expect(text).not.toContain(dirname(env.artifact));
      expect(text).not.toContain(jail(env).socketDir);
    },
    control: "skip",
  },
  {
    kind: A,
    id: "J15-node-fs",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'node:fs readFileSync("/etc/passwd")',
    refusal: 'NotCapable: Requires read access to "/etc/passwd"',
    check: notCapable("read", "/etc/passwd"),
  },
  {
    kind: A,
    id: "J16-node-require",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'createRequire(import.meta.url)("/etc/passwd")',
    refusal: 'NotCapable: Requires read access to "/etc/passwd"',
    check: notCapable("read", "/etc/passwd"),
  },
  {
    kind: A,
    id: "J17-stat",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.stat("/etc/passwd")',
    refusal: 'NotCapable: Requires read access to "/etc/passwd"',
    check: notCapable("read", "/etc/passwd"),
  },
  {
    kind: A,
    id: "J18-realpath",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.realPath("/etc")',
    refusal: 'NotCapable: Requires read access to "/etc"',
    check: notCapable("read", "/etc"),
  },
  {
    kind: A,
    id: "J19-readlink",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.readLink("/proc/self/exe")',
    refusal: 'NotCapable: Requires read access to "/proc/self/exe"',
    check: notCapable("read", "/proc/self/exe"),
  },
  {
    kind: A,
    id: "J20-dev-read",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.readFile("/dev/urandom")',
    refusal: 'NotCapable: Requires read access to "/dev/urandom"',
    check: notCapable("read", "/dev/urandom"),
  },
  {
    kind: H,
    id: "J21-jail-filesystem",
    group: "host",
    layer: "os",
    verdict: "refused",
    title: "what exists in the jail at all: its root, /opt/tether, and which mounts are writable",
    refusal:
      "bwrap: the root holds only dev, lib*, opt, proc, run, tmp; Deno, libraries and artifact are read-only binds; the one writable host path is the socket inode /run/tether/s.sock (fixed F1: no longer its directory)",
    inspect: (env) => {
      const { root, denoPid } = jail(env);
      const top = listing(root) ?? [];
      expect(top.filter((n) => !["dev", "lib", "lib64", "opt", "proc", "run", "tmp", "usr"].includes(n))).toEqual([]);
      expect(listing(`${root}/opt/tether`)).toEqual(["deno", "satellite.js"]);
      expect(listing(`${root}/run`)).toEqual(["tether"]);
      const m = mounts(denoPid);
      // Writable: bwrap's own tmpfs root, /dev (its device nodes), /proc, the /tmp tmpfs, and the socket inode itself.
      const writable = [...m].filter(([, options]) => options.includes("rw")).map(([point]) => point);
      expect(
        writable.filter(
          (p) => !["/", "/dev", "/proc", "/tmp", "/run/tether/s.sock"].includes(p) && !p.startsWith("/dev/"),
        ),
      ).toEqual([]);
      expect(writable).toContain("/run/tether/s.sock");
      expect(m.get("/proc/sys")).toContain("ro");
      for (const point of ["/opt/tether/deno", "/opt/tether/satellite.js"]) expect(m.get(point)).toContain("ro");
      for (const [point, options] of m) if (point.startsWith("/lib")) expect(options).toContain("ro");
    },
  },

  // Environment
  {
    kind: A,
    id: "J22-env-get",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.env.get("PATH")',
    refusal: 'NotCapable: Requires env access to "PATH"',
    check: notCapable("env", "PATH"),
  },
  {
    kind: A,
    id: "J23-env-object",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.env.toObject()",
    refusal: "NotCapable: Requires env access",
    check: notCapable("env"),
  },
  {
    kind: A,
    id: "J24-node-env",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "process.env.PATH through node:process",
    refusal: 'NotCapable: Requires env access to "PATH"',
    check: notCapable("env", "PATH"),
  },
  {
    kind: A,
    id: "J25-parent-env",
    group: "env",
    layer: "broker",
    verdict: "refused",
    title:
      "boot from a broker whose environment carries DENO_PERMISSION_BROKER_PATH, DENO_V8_FLAGS=--allow-natives-syntax, HTTP(S)_PROXY",
    refusal:
      "the child's environment is built, not inherited (bwrap --clearenv, then HOME, DENO_DIR, NO_COLOR, PATH and bwrap's PWD): none of them reach Deno; reads still NotCapable, natives syntax still a SyntaxError",
    check: (seen, env) => {
      observed(seen, {
        readStillRefused: no("NotCapable", permMessage("read", "/etc/passwd")),
        envStillRefused: no("NotCapable", permMessage("env", "DENO_PERMISSION_BROKER_PATH")),
        nativesSyntax: no("SyntaxError", "Unexpected token '%'"),
        proxiedFetch: no("NotCapable", permMessage("net", "example.com:80")),
        readPermission: ok("prompt"),
      });
      const { bwrapPid, denoPid } = jail(env);
      expect(environKeys(bwrapPid)).toEqual([]);
      // The four the broker sets, and PWD, which bwrap --chdir adds.
      expect(environKeys(denoPid)).toEqual(["DENO_DIR", "HOME", "NO_COLOR", "PATH", "PWD"]);
      expect(env.listeners.hits.permissionBroker).toBe(0);
    },
  },

  // Processes, native code, signals
  {
    kind: A,
    id: "J26-run-command",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'new Deno.Command("/bin/sh", { args: ["-c", "id"] }).output()',
    refusal: 'NotCapable: Requires run access to "/bin/sh"',
    check: notCapable("run", "/bin/sh"),
  },
  {
    kind: A,
    id: "J27-run-self",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "new Deno.Command(Deno.execPath()) — re-running Deno with its own flags",
    refusal: 'NotCapable: Requires run access to "/opt/tether/deno"',
    check: (seen) =>
      refusedWith(seen, "NotCapable", /^Requires run access to "[^"]*\/deno", run again with the --allow-run flag$/),
  },
  {
    kind: A,
    id: "J28-node-child-process",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'node:child_process spawnSync("/bin/sh")',
    refusal: "NotCapable: Requires env access (child_process reads the environment first)",
    check: notCapable("env"),
  },
  {
    kind: A,
    id: "J29-ffi-dlopen",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.dlopen("libc.so.6")',
    refusal: 'NotCapable: Requires ffi access to "libc.so.6"',
    check: notCapable("ffi", "libc.so.6"),
  },
  {
    kind: A,
    id: "J30-node-dlopen",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'process.dlopen(module, "libc.so.6") through node:process',
    refusal: 'NotCapable: Requires ffi access to "libc.so.6"',
    check: notCapable("ffi", "libc.so.6"),
  },
  {
    kind: A,
    id: "J31-kill",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.kill(1, "SIGKILL")',
    refusal: "NotCapable: Requires run access",
    check: notCapable("run"),
  },
  {
    kind: A,
    id: "J32-inspector",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "node:inspector open() — a debugger port into the satellite",
    refusal: 'NotCapable: Requires sys access to "inspector"',
    check: notCapable("sys", "inspector"),
  },
  {
    kind: A,
    id: "J33-v8-setflags",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'node:v8 setFlagsFromString("--allow-natives-syntax"), then %IsSmi(1)',
    refusal: "SyntaxError: Unexpected token '%' (the flag is not applied)",
    check: (seen) => refusedWith(seen, "SyntaxError", "Unexpected token '%'"),
  },
  {
    kind: H,
    id: "J34-no-privileges",
    group: "host",
    layer: "os",
    verdict: "refused",
    title: "the jailed Deno's capabilities and privilege flags",
    refusal: "bwrap --cap-drop ALL: CapEff, CapPrm, CapBnd, CapAmb all zero; NoNewPrivs 1",
    inspect: (env) => {
      const s = procStatus(jail(env).denoPid);
      const zero = "0000000000000000";
      expect({
        CapEff: s.CapEff,
        CapPrm: s.CapPrm,
        CapBnd: s.CapBnd,
        CapAmb: s.CapAmb,
        NoNewPrivs: s.NoNewPrivs,
      }).toEqual({
        CapEff: zero,
        CapPrm: zero,
        CapBnd: zero,
        CapAmb: zero,
        NoNewPrivs: "1",
      });
    },
  },

  // Network
  {
    kind: A,
    id: "J35-tcp-127",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connect to a live loopback listener at 127.0.0.1",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>"; the listener sees no connection',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J36-tcp-0000",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connect to 0.0.0.0 (reaches loopback listeners on Linux)",
    refusal: 'NotCapable: Requires net access to "0.0.0.0:<port>"',
    check: (seen, env) => notCapable("net", `0.0.0.0:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J37-tcp-v6",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connect to [::1]",
    refusal: 'NotCapable: Requires net access to "[::1]:<port>"',
    check: (seen, env) => notCapable("net", `[::1]:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J38-tcp-localhost",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connect to localhost",
    refusal: 'NotCapable: Requires net access to "localhost:<port>"',
    check: (seen, env) => notCapable("net", `localhost:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J39-fetch-127",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "fetch to the loopback HTTP server at 127.0.0.1",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>"',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J40-fetch-0000",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "fetch to http://0.0.0.0:<port>",
    refusal: 'NotCapable: Requires net access to "0.0.0.0:<port>"',
    check: (seen, env) => notCapable("net", `0.0.0.0:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J41-fetch-v6",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "fetch to http://[::1]:<port>",
    refusal: 'NotCapable: Requires net access to "[::1]:<port>"',
    check: (seen, env) => notCapable("net", `[::1]:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J42-websocket",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "new WebSocket(ws://127.0.0.1:<port>)",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>"',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J43-http-client-proxy",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.createHttpClient with a proxy on loopback, then fetch through it",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>" (the proxy is checked)',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J44-node-net",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "node:net connect to 127.0.0.1",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>"',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J45-udp-listen",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.listenDatagram (UDP)",
    refusal: "TypeError: Deno.listenDatagram is not a function (unstable API, not enabled)",
    check: (seen) => refusedWith(seen, "TypeError", "Deno.listenDatagram is not a function"),
  },
  {
    kind: A,
    id: "J46-udp-node",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "node:dgram send to a live UDP listener on 127.0.0.1",
    refusal: 'NotCapable: Requires net access to "0.0.0.0:0" (the implicit bind); the listener gets no datagram',
    check: notCapable("net", "0.0.0.0:0"),
  },
  {
    kind: A,
    id: "J47-dns-nameserver",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.resolveDns with a nameserver on loopback (the live UDP listener)",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<udp port>"',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.udpPort}`)(seen),
  },
  {
    kind: A,
    id: "J48-dns-default",
    group: "shared",
    layer: "os",
    verdict: "refused",
    title: "Deno.resolveDns with the system resolver",
    refusal:
      "Error: proto error: io error: No such file or directory (no /etc/resolv.conf in the jail; plain Deno: NotCapable for the nameserver)",
    check: (seen) => refusedWith(seen, "Error", "proto error: io error: No such file or directory (os error 2)"),
    control: (seen) =>
      refusedWith(seen, "NotCapable", /^Requires net access to "[^"]+:53", run again with the --allow-net flag$/),
  },
  {
    kind: A,
    id: "J49-connect-tls",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connectTls to 127.0.0.1",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>"',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J50-listen-tcp",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.listen({ port: 0 })",
    refusal: 'NotCapable: Requires net access to "0.0.0.0:0"',
    check: notCapable("net", "0.0.0.0:0"),
  },
  {
    kind: A,
    id: "J51-serve-http",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.serve({ port: 0 })",
    refusal: 'NotCapable: Requires net access to "0.0.0.0:0"',
    check: notCapable("net", "0.0.0.0:0"),
  },
  {
    kind: A,
    id: "J52-listen-unix",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.listen on a Unix socket in /tmp",
    refusal: 'NotCapable: Requires read access to "/tmp/escape.sock"',
    check: notCapable("read", "/tmp/escape.sock"),
  },
  {
    kind: A,
    id: "J53-unix-other",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connect to a live Unix socket in a host temp dir",
    refusal: 'NotCapable: Requires read access to "<host tmp>/other.sock"; the listener sees no connection',
    args: (env) => ({ path: env.listeners.unixPath }),
    check: (seen, env) => notCapable("read", env.listeners.unixPath)(seen),
  },
  {
    kind: A,
    id: "J54-unix-abstract",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.connect to a live abstract Unix socket (\\0name, not a file)",
    refusal: 'NotCapable: Requires net access to "unix:\\0<name>"; the listener sees no connection',
    args: (env) => ({ name: env.listeners.abstractName }),
    check: (seen, env) => notCapable("net", `unix:\0${env.listeners.abstractName}`)(seen),
  },
  {
    kind: A,
    id: "J55-vsock",
    group: "crash",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.connect({ transport: "vsock", cid: 2 }) — vsock is not network-namespaced',
    refusal:
      "Deno exits 70 (unstable API without --unstable-vsock): answered crashed, the next call boots a fresh satellite",
    check: async (seen, env) => {
      expect(seen).toEqual({
        answered: false,
        code: "crashed",
        msg: "Satellite 'escape' exited with code 70 during 'attempt'",
      });
      await servedNext(env, "fresh process");
    },
  },
  {
    kind: H,
    id: "J56-netns",
    group: "host",
    layer: "os",
    verdict: "refused",
    title: "the jail's network namespace",
    refusal: "bwrap --unshare-all: its own network namespace holding only lo",
    inspect: (env) => {
      const { denoPid } = jail(env);
      expect(namespace(denoPid, "net")).not.toBe(namespace("self", "net"));
      const interfaces = readFileSync(`/proc/${denoPid}/net/dev`, "utf8")
        .split("\n")
        .slice(2)
        .map((l) => l.split(":")[0]!.trim())
        .filter((n) => n !== "");
      expect(interfaces).toEqual(["lo"]);
    },
  },

  // Code from elsewhere
  {
    kind: A,
    id: "J57-import-https",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of an https: module",
    refusal: "TypeError: A remote specifier was requested … but --no-remote is specified",
    check: (seen) =>
      refusedWith(
        seen,
        "TypeError",
        'A remote specifier was requested: "https://deno.land/std@0.224.0/path/mod.ts", but --no-remote is specified.',
      ),
  },
  {
    kind: A,
    id: "J58-import-jsr",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'import("jsr:@std/path@1")',
    refusal: "TypeError: JSR package manifest … failed to load … --no-remote is specified",
    check: (seen) =>
      refusedWith(
        seen,
        "TypeError",
        `JSR package manifest for '@std/path' failed to load. A remote specifier was requested: "https://jsr.io/@std/path/meta.json", but --no-remote is specified.`,
      ),
  },
  {
    kind: A,
    id: "J59-import-npm",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'import("npm:left-pad@1.3.0")',
    refusal: "TypeError: npm specifiers were requested; but --no-npm is specified",
    check: (seen) => refusedWith(seen, "TypeError", "npm specifiers were requested; but --no-npm is specified"),
  },
  {
    kind: H,
    id: "J60-no-download",
    group: "host",
    layer: "os",
    verdict: "refused",
    title: "after J57–J59: whether anything was fetched into DENO_DIR (/tmp/deno in the jail)",
    refusal:
      "nothing downloaded: no remote/npm/jsr cache in the jail's DENO_DIR, and no network to download from (J56)",
    inspect: (env) => {
      // Deno keeps its own caches there (code cache, analysis caches, an empty npm/), never anything fetched.
      const files = tree(`${jail(env).root}/tmp`);
      expect(files).toContain("deno/v8_code_cache_v2");
      expect(
        files.filter(
          (f) => /^deno\/(?:remote|deps|gen|npm|jsr|registries)\/./.test(f) || /https?|jsr\.io|npmjs/.test(f),
        ),
      ).toEqual([]);
    },
  },

  // Workers
  {
    kind: A,
    id: "J61-worker-data-read",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "a Worker from a data: URL that reads /etc/passwd",
    refusal: 'NotCapable: Requires read access to "/etc/passwd" (workers inherit the parent\'s permissions)',
    check: notCapable("read", "/etc/passwd"),
  },
  {
    kind: A,
    id: "J62-worker-data-import",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "a Worker whose data: main module statically imports file:///etc/passwd as text",
    refusal: 'worker error: Requires read access to "/etc/passwd"',
    check: (seen) => refusedWith(seen, "WorkerError", permMessage("read", "/etc/passwd")),
  },
  {
    kind: A,
    id: "J63-worker-blob-import",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "a Worker from a blob: URL that imports file:///etc/passwd",
    refusal: 'TypeError: Requires read access to "/etc/passwd"',
    check: importDenied("/etc/passwd"),
  },
  {
    kind: A,
    id: "J64-worker-connect",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "a Worker from a data: URL that connects to the loopback listener",
    refusal: 'NotCapable: Requires net access to "127.0.0.1:<port>"',
    check: (seen, env) => notCapable("net", `127.0.0.1:${env.listeners.httpPort}`)(seen),
  },
  {
    kind: A,
    id: "J65-worker-file",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'new Worker("file:///etc/passwd")',
    refusal: 'worker error: Requires read access to "/etc/passwd"',
    check: (seen) => refusedWith(seen, "WorkerError", permMessage("read", "/etc/passwd")),
  },
  {
    kind: A,
    id: "J66-worker-escalate",
    group: "crash",
    layer: "deno",
    verdict: "refused",
    title: "new Worker(…, { deno: { permissions: { read: true } } }) — a worker asking for more",
    refusal: "Deno exits 70 (unstable worker options): answered crashed, the next call boots a fresh satellite",
    check: async (seen, env) => {
      expect(seen).toEqual({
        answered: false,
        code: "crashed",
        msg: "Satellite 'escape' exited with code 70 during 'attempt'",
      });
      await servedNext(env, "fresh process");
    },
  },
  {
    kind: A,
    id: "J67-worker-threads",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "a node:worker_threads Worker (eval) that reads /etc/passwd",
    refusal: 'NotCapable: Requires read access to "/etc/passwd"',
    check: notCapable("read", "/etc/passwd"),
  },

  // Writing
  {
    kind: A,
    id: "J68-write-tmp",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.writeTextFile("/tmp/<marker>")',
    refusal: "NotCapable: Requires write access to \"/tmp/<marker>\"; nothing appears in the host's or the jail's /tmp",
    args: (env) => ({ name: env.files.marker }),
    check: (seen, env) => {
      notCapable("write", `/tmp/${env.files.marker}`)(seen);
      expect(listing("/tmp")).not.toContain(env.files.marker);
      if (env.jail !== null) expect(listing(`${env.jail.root}/tmp`)).not.toContain(env.files.marker);
    },
  },
  {
    kind: A,
    id: "J69-write-run-dir",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.writeTextFile("/run/tether/<marker>") — beside the socket, in the host-backed directory',
    refusal: 'NotCapable: Requires write access to "/run/tether/<marker>"; the host socket dir stays empty',
    args: (env) => ({ name: env.files.marker }),
    check: (seen, env) => {
      notCapable("write", `/run/tether/${env.files.marker}`)(seen);
      if (env.jail !== null) expect(listing(env.jail.socketDir)).toEqual([]);
    },
  },
  {
    kind: A,
    id: "J70-write-artifact",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "overwrite the artifact at /opt/tether/satellite.js",
    refusal: 'NotCapable: Requires write access to "/opt/tether/satellite.js" (and the bind is read-only, J21)',
    check: (seen, env) => {
      notCapable("write", "/opt/tether/satellite.js")(seen);
      expect(readFileSync(env.artifact, "utf8")).toBe(env.artifactCode);
    },
  },
  {
    kind: A,
    id: "J71-make-temp",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.makeTempFile()",
    refusal: "NotCapable: Requires write access to <TMP>",
    check: (seen) =>
      refusedWith(seen, "NotCapable", "Requires write access to <TMP>, run again with the --allow-write flag"),
  },
  {
    kind: A,
    id: "J72-symlink",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.symlink("/etc/passwd", "/run/tether/s.sock") — a link at the granted path',
    refusal: "NotCapable: Deno.symlink() requires unscoped --allow-read and --allow-write",
    check: (seen) =>
      refusedWith(
        seen,
        "NotCapable",
        /^Deno\.symlink\(\) requires unscoped --allow-read and --allow-write permissions/,
      ),
  },
  {
    kind: A,
    id: "J73-node-write",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'node:fs writeFileSync("/tmp/<marker>")',
    refusal: 'NotCapable: Requires write access to "/tmp/<marker>"',
    args: (env) => ({ name: env.files.marker }),
    check: (seen, env) => {
      notCapable("write", `/tmp/${env.files.marker}`)(seen);
      expect(listing("/tmp")).not.toContain(env.files.marker);
    },
  },

  // The broker's socket path
  {
    kind: H,
    id: "J74-sock-host-gone",
    group: "socket",
    layer: "broker",
    verdict: "refused",
    title: "the host path of the broker's socket once the satellite has said hello",
    refusal: "the broker unlinked it after the boot token was proven: the host socket dir is empty",
    inspect: (env) => expect(listing(jail(env).socketDir)).toEqual([]),
  },
  {
    kind: A,
    id: "J75-sock-stat",
    group: "socket",
    layer: "broker",
    verdict: "refused",
    title: 'Deno.stat("/run/tether/s.sock") (read was granted there until the runtime connected)',
    refusal: "NotCapable: the runtime revoked its socket grants once connected (and the host path is already unlinked)",
    check: async (seen, env) => {
      refusedWith(seen, "NotCapable", /^Requires read access to /);
      await servedNext(env, "same process");
    },
  },
  {
    kind: A,
    id: "J76-sock-reconnect",
    group: "socket",
    layer: "broker",
    verdict: "refused",
    title: "a second connection to the broker's socket path (net was granted there until the runtime connected)",
    refusal: "NotCapable: grants revoked once connected; nothing listens there any more either",
    check: async (seen, env) => {
      refusedWith(seen, "NotCapable", /^Requires (net|read|write) access to /);
      await servedNext(env, "same process");
    },
  },
  {
    kind: A,
    id: "J77-sock-unlink",
    group: "socket",
    layer: "broker",
    verdict: "refused",
    title: 'Deno.remove("/run/tether/s.sock") (write is granted there)',
    refusal: "NotCapable: grants revoked once connected; the next call on the same satellite is served",
    check: async (seen, env) => {
      refusedWith(seen, "NotCapable", /^Requires write access to /);
      await servedNext(env, "same process");
    },
  },
  {
    kind: A,
    id: "J78-sock-chmod",
    group: "socket",
    layer: "broker",
    verdict: "refused",
    title: 'Deno.chmod("/run/tether/s.sock", 0o777)',
    refusal: "NotCapable: grants revoked once connected; the next call is served",
    check: async (seen, env) => {
      refusedWith(seen, "NotCapable", /^Requires write access to /);
      await servedNext(env, "same process");
    },
  },
  {
    kind: A,
    id: "J79-sock-relisten",
    group: "socket",
    layer: "deno",
    verdict: "refused",
    title:
      "Deno.listen on /run/tether/s.sock (allowed by the grants until the runtime connected) and wait for the broker",
    refusal:
      "NotCapable: grants revoked once connected (and the broker never connects there again); the next call is served on the original connection",
    args: () => ({ ms: 300 }),
    check: async (seen, env) => {
      refusedWith(seen, "NotCapable", /^Requires (net|read|write) access to /);
      await servedNext(env, "same process");
      expect(listing(jail(env).socketDir)).toEqual([]);
    },
  },
  {
    kind: A,
    id: "J80-sock-write-host",
    group: "socket",
    layer: "os",
    verdict: "refused",
    title: "mkdir at /run/tether/s.sock, write 1 MiB and a directory tree under it (all inside the grants)",
    refusal:
      "the runtime revokes its socket grants once connected (NotCapable), and only the socket inode is bound, never its host directory (fixed F1)",
    args: () => ({ mb: 1 }),
    check: async (seen, env) => {
      const socketDir = jail(env).socketDir;
      const written = tree(socketDir);
      await servedNext(env, "same process");
      // Secure: nothing the satellite does appears on the host.
      expect(written).toEqual([]);
      expect(seen).toMatchObject({ answered: true, obs: { outcome: "refused" } });
    },
  },
  {
    kind: H,
    id: "J81-proc-pidns",
    group: "host",
    layer: "os",
    verdict: "refused",
    title: "which processes the jail's /proc shows",
    refusal: "bwrap --unshare-pid: its own pid namespace; /proc lists pid 1 (bwrap's init) and 2 (Deno) only",
    inspect: (env) => {
      const { root, denoPid, initPid } = jail(env);
      expect((listing(`${root}/proc`) ?? []).filter((n) => /^\d+$/.test(n))).toEqual(["1", "2"]);
      expect(namespace(denoPid, "pid")).not.toBe(namespace("self", "pid"));
      expect(readFileSync(`/proc/${initPid}/cmdline`, "utf8").split("\0")[0]).toMatch(/bwrap$/);
    },
  },

  // /proc and /dev
  {
    kind: A,
    id: "J82-proc-readdir",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.readDir("/proc")',
    refusal: 'NotCapable: Requires read access to "/proc"',
    check: notCapable("read", "/proc"),
  },
  {
    kind: A,
    id: "J83-proc-1-cmdline",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.readTextFile("/proc/1/cmdline")',
    refusal: 'NotCapable: Requires read access to "/proc/1/cmdline"',
    check: notCapable("read", "/proc/1/cmdline"),
  },
  {
    kind: A,
    id: "J84-proc-import",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of file:///proc/1/cmdline as text (computed specifier)",
    refusal: 'TypeError: Requires read access to "/proc/1/cmdline"',
    check: importDenied("/proc/1/cmdline"),
  },
  {
    kind: A,
    id: "J85-proc-self-mem",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.open("/proc/self/mem", { read: true, write: true })',
    refusal: 'NotCapable: Requires read access to "/proc/self/mem"',
    check: notCapable("read", "/proc/self/mem"),
  },
  {
    kind: A,
    id: "J86-proc-self-environ",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "import() of file:///proc/self/environ as text",
    refusal: 'TypeError: Requires read access to "/proc/self/environ"',
    check: importDenied("/proc/self/environ"),
  },
  {
    kind: H,
    id: "J87-dev-minimal",
    group: "host",
    layer: "os",
    verdict: "refused",
    title: "which devices exist in the jail's /dev",
    refusal:
      "bwrap --dev: null, zero, full, random, urandom, tty, pts, shm and std streams only (no vsock, disks, kvm, kmsg, mem)",
    inspect: (env) => {
      const devices = listing(`${jail(env).root}/dev`) ?? [];
      const allowed = [
        "console",
        "core",
        "fd",
        "full",
        "mqueue",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
      ];
      expect(devices.filter((d) => !allowed.includes(d))).toEqual([]);
      expect(devices).toContain("null");
    },
  },

  // Asking for more
  {
    kind: A,
    id: "J88-perm-request",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.permissions.request({ name: "read" })',
    refusal: 'state "denied" (--no-prompt): nobody is asked',
    check: (seen) => expect(succeeded(seen)).toBe("denied"),
  },
  {
    kind: A,
    id: "J89-perm-request-all",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.permissions.requestSync for read, write, net, env, run, ffi, sys, import",
    refusal: 'every state "denied"',
    check: (seen) =>
      observed(
        seen,
        Object.fromEntries(
          ["read", "write", "net", "env", "run", "ffi", "sys", "import"].map((n) => [n, ok("denied")]),
        ),
      ),
  },
  {
    kind: A,
    id: "J90-perm-query",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.permissions.querySync: what the satellite holds",
    refusal:
      'nothing is "granted": the socket grants were revoked once the runtime connected; everything reads "prompt" (refused under --no-prompt)',
    check: (seen) =>
      observed(seen, {
        read: ok("prompt"),
        readSocket: ok("prompt"),
        writeSocket: ok("prompt"),
        netSocket: ok("prompt"),
        net: ok("prompt"),
      }),
    control: "skip",
  },

  // Other surfaces
  {
    kind: A,
    id: "J91-kv",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: 'Deno.openKv(":memory:")',
    refusal: "TypeError: Deno.openKv is not a function (unstable API, not enabled)",
    check: (seen) => refusedWith(seen, "TypeError", "Deno.openKv is not a function"),
  },
  {
    kind: A,
    id: "J92-sys-info",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "Deno.hostname, osRelease, networkInterfaces, uid, loadavg",
    refusal: 'NotCapable: Requires sys access to "<name>", for each',
    check: (seen) =>
      observed(
        seen,
        Object.fromEntries(
          ["hostname", "osRelease", "networkInterfaces", "uid", "loadavg"].map((n) => [
            n,
            no("NotCapable", permMessage("sys", n)),
          ]),
        ),
      ),
  },
  {
    kind: A,
    id: "J93-info-paths",
    group: "shared",
    layer: "os",
    verdict: "contained",
    title: "Deno.execPath(), Deno.cwd(), Deno.mainModule, import.meta.url (need no permission)",
    refusal: "contained: they name only jail paths (/opt/tether/…, /tmp); plain Deno names the host's",
    check: (seen) =>
      observed(seen, {
        execPath: ok("/opt/tether/deno"),
        cwd: ok("/tmp"),
        mainModule: ok("file:///opt/tether/satellite.js"),
        importMetaUrl: ok("file:///opt/tether/satellite.js"),
      }),
    control: (seen, env) => expect(JSON.stringify(seen)).toContain(env.artifact),
  },
  {
    kind: A,
    id: "J94-webgpu",
    group: "shared",
    layer: "os",
    verdict: "refused",
    title: "navigator.gpu.requestAdapter()",
    refusal: "adapter null: no GPU device in the jail",
    check: (seen) => expect(succeeded(seen)).toEqual({ gpu: "object", adapter: null }),
    control: "skip",
  },
  {
    kind: A,
    id: "J95-broadcast",
    group: "peer",
    layer: "broker",
    verdict: "refused",
    title: "BroadcastChannel between two satellites running at once",
    refusal:
      "0 foreign messages: the channel is per process, and each satellite is its own process (within one it works: 1 local message)",
    run: async (env, args) => {
      if (env.peer === null) throw new Error("J95 needs a peer satellite");
      const [heard, posted] = await Promise.all([
        attempt(env.peer, { ...args, name: "listen", ms: 600 }),
        attempt(env.slot, { ...args, name: "post", ms: 600 }),
      ]);
      expect(succeeded(posted)).toEqual({ posted: expect.any(Number) });
      return heard;
    },
    check: (seen) => expect(succeeded(seen)).toEqual({ local: 1, foreign: 0 }),
  },
  {
    kind: A,
    id: "J96-storage",
    group: "peer",
    layer: "os",
    verdict: "refused",
    title:
      "localStorage and caches (no permission needed; every satellite has the same main module URL, so the same origin)",
    refusal: "a second satellite sees nothing: DENO_DIR is /tmp/deno on each jail's own tmpfs",
    args: (env) => ({ name: env.files.marker }),
    run: async (env, args) => {
      if (env.peer === null) throw new Error("J96 needs a peer satellite");
      await attempt(env.slot, args);
      // The same satellite does see what it stored: the storage itself works.
      const again = await attempt(env.slot, args);
      expect(succeeded(again)).toEqual({ localStorageBefore: args.name, cacheBefore: args.name });
      return attempt(env.peer, args);
    },
    check: (seen) => expect(succeeded(seen)).toEqual({ localStorageBefore: null, cacheBefore: null }),
  },

  // Resources
  {
    kind: A,
    id: "J97-heap-bomb",
    group: "crash",
    layer: "broker",
    verdict: "refused",
    title: "allocate JS arrays without bound (limit memory_mb = 64)",
    refusal:
      "V8 aborts at --max-old-space-size: answered crashed (ran out of memory), the next call boots a fresh satellite",
    deadlineMs: 20_000,
    check: async (seen, env) => {
      expect(seen).toEqual({
        answered: false,
        code: "crashed",
        msg: "Satellite 'escape' ran out of memory (limit 64 MiB) and exited during 'attempt'",
      });
      await servedNext(env, "fresh process");
    },
  },
  {
    kind: A,
    id: "J98-offheap-bomb",
    group: "crash",
    layer: "broker",
    verdict: "refused",
    title: "hold 256 MiB in ArrayBuffers (off the V8 heap) with memory_mb = 64",
    refusal:
      "the satellite's memory cgroup (2 × memory_mb + 144 MiB, tmpfs included) where the host offers one, else the broker's RSS watchdog: answered crashed, the next call boots a fresh one (fixed F2)",
    args: () => ({ mb: 256 }),
    deadlineMs: 20_000,
    check: async (seen, env) => {
      // Secure: past its bound the satellite is stopped — during the call (crashed),
      // or within a few watchdog polls after it answered while still holding the memory.
      if (seen.answered) {
        for (let i = 0; i < 40 && env.slot.process?.pid === env.before.pid; i++)
          await new Promise((r) => setTimeout(r, 100));
        expect(env.slot.process?.pid).not.toBe(env.before.pid);
      } else {
        // The cgroup's bound (where the host offers one) or the RSS watchdog, whichever sees it first.
        expect(seen).toMatchObject({
          answered: false,
          code: "crashed",
          msg: expect.stringMatching(/memory bound|its cgroup's \d+ MiB bound/),
        });
      }
      await servedNext(env, "fresh process");
    },
  },
  {
    kind: A,
    id: "J99-infinite-loop",
    group: "crash",
    layer: "broker",
    verdict: "refused",
    title: "for (;;) {} — block the satellite's event loop",
    refusal: "the broker's deadline: answered timeout, the satellite killed, the next call boots a fresh one",
    deadlineMs: 300,
    check: async (seen, env) => {
      expect(seen).toEqual({
        answered: false,
        code: "timeout",
        msg: "'attempt' did not answer within its 300 ms deadline; the satellite was stopped",
      });
      await servedNext(env, "fresh process");
    },
  },

  // Late additions (ids are stable, so new cases go at the end)
  {
    kind: A,
    id: "J100-proc-sys-write",
    group: "shared",
    layer: "deno",
    verdict: "refused",
    title: "open a kernel sysctl (/proc/sys/kernel/printk_ratelimit) for writing; nothing is written",
    refusal: 'NotCapable: Requires write access to "/proc/sys/kernel/printk_ratelimit"',
    check: notCapable("write", "/proc/sys/kernel/printk_ratelimit"),
  },
  {
    kind: H,
    id: "J101-proc-sys-os-alone",
    group: "bypass",
    layer: "os",
    verdict: "refused",
    title:
      "J100 again in the same bwrap jail around a Deno with --allow-all (as a Deno permission bypass would leave it)",
    refusal: "bwrap --ro-bind /proc/sys /proc/sys: read-only even when the jail's uid 0 is the host's root (fixed F4)",
    inspect: async () => {
      // Secure: the OS layer alone refuses the open (read-only /proc/sys, or a jail uid that is not host root).
      expect(await bypassProbe()).toEqual({
        openedForWriting: false,
        error: {
          name: expect.stringMatching(/^(PermissionDenied|Error)$/),
          message: expect.stringMatching(/Permission denied|Read-only file system/),
        },
      });
    },
  },
];

/**
 * Runs a one-off program in the exact bwrap jail `launchCommand` builds, with
 * Deno's checks off (--allow-all instead of the socket grants): what the OS
 * layer alone does about a sysctl. It only opens the file, never writes.
 */
function bypassProbe(): Promise<unknown> {
  return runWithOsLayerOnly(
    `try { const f = await Deno.open("/proc/sys/kernel/printk_ratelimit", { write: true }); f.close(); console.log(JSON.stringify({ openedForWriting: true })); }
     catch (e) { console.log(JSON.stringify({ openedForWriting: false, error: { name: e.name, message: e.message } })); }`,
  );
}

/** Ids in table order. */
export const CASE_IDS: readonly string[] = CASES.map((c) => c.id);

/** The docs table row for a case (docs/jail.md shows exactly these). */
export function docsRow(c: JailCase): string {
  const verdict = c.finding ? `**escaped (${c.finding})**` : c.verdict;
  const cell = (s: string) => s.replace(/\|/g, "\\|");
  return `| ${c.id} | ${cell(c.title)} | ${cell(c.refusal)} | ${c.layer} | ${verdict} |`;
}
