/**
 * `tether session` and `tether audit --hooks` through the real binary
 * (`node bin/tether.js`, a fresh TETHER_HOME, no terminal on stdin) over real
 * installs of the hook-bus fixtures: status opens the session in the CLI's own
 * process and boots real satellites (broken fails to boot, needs-broken
 * inherits it, mismatch serves the wrong tools), preferences written by
 * enable/disable/reset show in the next status, and the hook traces a real
 * session leaves in the ledger are listed and filtered.
 *
 * The tests share one home and run in order; independent spawns run side by side.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import type { AuditEntry, HookTraceEntry } from "../../broker/operator/audit.js";
import type { PreferenceChange } from "../../broker/cli/session.js";
import { readManifest } from "../../broker/install/manifest.js";
import { silentLogger } from "../../broker/base/log.js";
import { Session, type ExtensionStatus } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const BIN = join(REPO, "bin", "tether.js");
const FIXTURES = join(REPO, "tests/integration/fixtures/bus");
const INSTALLED = ["broken", "ctxadd", "hooker", "mismatch", "needs-broken", "worker"];
/** What worker declares (run, fetch, secret, …; read from its manifest, which other tests' needs may grow). */
const WORKER = readManifest(join(FIXTURES, "worker"));
const WORKER_TOOLS = WORKER.tool.map((t) => t.name);
const WORKER_COMMANDS = WORKER.command.map((c) => c.name);
/** Per test: a few spawns, each paying tsx start-up and (status) the satellites' boots. */
const SLOW = 120_000;

interface Run {
  readonly code: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

async function tether(home: string, ...args: string[]): Promise<Run> {
  const result = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 60_000,
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

function parse<T>(run: Run): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${String(run.code)}):\n${run.stdout}\n--- stderr ---\n${run.stderr}`);
  }
}

function byName(run: Run): Record<string, ExtensionStatus> {
  expect(run.code).toBe(0);
  return Object.fromEntries(parse<ExtensionStatus[]>(run).map((s) => [s.name, s]));
}

let root: string;
let home: string;
let workspace: string;

/** Reads the store directly (another connection, as an operator's sqlite3 would). */
function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(home, "tether.db"), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-cli-session-"));
  home = join(root, "home");
  workspace = join(root, "workspace");
  mkdirSync(workspace);
  // Real installs and approvals, through the library in this process.
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    for (const name of INSTALLED) {
      await broker.registry.install(join(FIXTURES, name));
      broker.registry.approve(name);
    }
  } finally {
    await broker.close();
  }
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("tether session and tether audit --hooks, in order, on one home", () => {
  test(
    "status boots the session: broken fails to start, needs-broken names it, worker is active with its tools, hooks is off by default",
    async () => {
      const [text, json] = await Promise.all([
        tether(home, "session", "status", "--workspace", workspace),
        tether(home, "session", "status", "--session", "fresh", "--json"),
      ]);

      expect(text.code).toBe(0);
      expect(text.stderr).toBe("");
      const lines = text.stdout.split("\n");
      expect(lines).toHaveLength(INSTALLED.length + 1); // one per extension, the built-in hooks included
      const line = (name: string) => lines.find((l) => l.split(/\s+/)[1] === name) ?? `(no line for ${name})`;
      expect(WORKER_TOOLS).toEqual(expect.arrayContaining(["run", "fetch", "secret"]));
      expect(line("worker")).toMatch(
        new RegExp(
          `^active\\s+worker\\s+tools: ${WORKER_TOOLS.join(", ")}; commands: ${WORKER_COMMANDS.map((c) => `/${c}`).join(", ")}$`,
        ),
      );
      expect(line("ctxadd")).toMatch(/^active\s+ctxadd\s+hooks: session_start, context, before_agent_start$/);
      expect(line("broken")).toMatch(/^inactive\s+broken\s+failed to start \(boot_failed\): /);
      expect(line("broken")).toContain("broken on purpose: missing configuration"); // the satellite's own stderr, on one line
      expect(line("needs-broken")).toMatch(
        /^inactive\s+needs-broken\s+needs 'broken' .*which is inactive: failed to start \(boot_failed\)/,
      );
      expect(line("mismatch")).toMatch(/^inactive\s+mismatch\s+failed to start \(served_mismatch\)/);
      expect(line("hooks")).toMatch(/^disabled\s+hooks\s+off by default; enable it with: tether session enable hooks$/);

      const s = byName(json);
      expect(Object.keys(s).sort()).toEqual([...INSTALLED, "hooks"].sort());
      expect(s["worker"]).toMatchObject({
        state: "active",
        reason: null,
        tools: WORKER_TOOLS,
        commands: WORKER_COMMANDS,
        preference: { enabled: true, source: "default" },
      });
      expect(s["hooker"]).toMatchObject({ state: "active", hooks: expect.arrayContaining(["tool_call", "cap_call"]) });
      expect(s["broken"]).toMatchObject({
        state: "inactive",
        reason: expect.stringMatching(/^failed to start \(boot_failed\)/),
      });
      expect(s["needs-broken"]).toMatchObject({
        state: "inactive",
        requires: ["broken"],
        reason: expect.stringContaining("'broken'"),
      });
      expect(s["mismatch"]).toMatchObject({ state: "inactive", reason: expect.stringContaining("served_mismatch") });
      expect(s["hooks"]).toMatchObject({
        state: "disabled",
        builtin: true,
        preference: { enabled: false, source: "default" },
      });

      // Both sessions were opened for real and closed again: the default one in --workspace, "fresh" in the cwd.
      const rows = query<{ id: string; workspace: string; closed_at: number | null }>(
        "select id, workspace, closed_at from sessions order by id",
      );
      expect(rows).toEqual([
        { id: "default", workspace, closed_at: expect.any(Number) },
        { id: "fresh", workspace: REPO, closed_at: expect.any(Number) },
      ]);
    },
    SLOW,
  );

  test(
    "disable worker in s1 only: s1 shows it disabled by its override, s2 still runs it; reset brings it back",
    async () => {
      const disable = await tether(home, "session", "disable", "worker", "--session", "s1");
      expect(disable.code).toBe(0);
      expect(disable.stdout).toBe(
        "worker in session s1: disabled (this session's override)\nA live session applies this on its next reload; tether session status --session s1 shows it.",
      );
      expect(query("select scope, extension, enabled from preferences")).toEqual([
        { scope: "s1", extension: "worker", enabled: 0 },
      ]);

      const [s1, s2] = (
        await Promise.all([
          tether(home, "session", "status", "--session", "s1", "--json"),
          tether(home, "session", "status", "--session", "s2", "--json"),
        ])
      ).map(byName);
      expect(s1!["worker"]).toMatchObject({
        state: "disabled",
        reason: "disabled in this session",
        preference: { enabled: false, source: "session" },
      });
      expect(s1!["hooker"]!.state).toBe("active"); // the rest of s1 is unaffected
      expect(s2!["worker"]).toMatchObject({
        state: "active",
        reason: null,
        preference: { enabled: true, source: "default" },
      });

      const reset = await tether(home, "session", "reset", "worker", "--session", "s1", "--json");
      expect(reset.code).toBe(0);
      expect(parse<PreferenceChange>(reset)).toMatchObject({
        extension: "worker",
        action: "reset",
        session: "s1",
        removed: true,
        preference: { enabled: true, source: "default" },
      });
      expect(query("select * from preferences")).toEqual([]);
      const again = byName(await tether(home, "session", "status", "--session", "s1", "--json"));
      expect(again["worker"]).toMatchObject({ state: "active", preference: { source: "default" } });
    },
    SLOW,
  );

  test(
    "enable hooks globally: active where nothing overrides it, still off in a session that disabled it",
    async () => {
      const off = await tether(home, "session", "disable", "hooks", "--session", "quiet");
      expect(off.code).toBe(0);
      const on = await tether(home, "session", "enable", "hooks");
      expect(on.code).toBe(0);
      expect(on.stdout).toBe(
        "hooks: enabled in every session without its own override (the global default)\n" +
          "sessions with their own override: quiet (disabled)\n" +
          "A live session applies this on its next reload; tether session status shows it.",
      );

      const [text, quiet] = await Promise.all([
        tether(home, "session", "status"),
        tether(home, "session", "status", "--session", "quiet", "--json"),
      ]);
      expect(text.code).toBe(0);
      expect(text.stdout.split("\n")[0]).toBe(
        "active   hooks         hooks: session_start, before_agent_start, tool_call, tool_result, agent_end, before_compact",
      );
      expect(byName(quiet)["hooks"]).toMatchObject({
        state: "disabled",
        preference: { enabled: false, source: "session" },
      });
    },
    SLOW,
  );

  test(
    "an unknown extension is refused naming the installed ones (exit 1); bad usage exits 2 before touching the home",
    async () => {
      const [unknown, unknownInSession, bare, noName, resetGlobal, action, badId, reserved, noFolder] =
        await Promise.all([
          tether(home, "session", "enable", "nosuch"),
          tether(home, "session", "disable", "nosuch", "--session", "s1"),
          tether(home, "session"),
          tether(home, "session", "enable"),
          tether(home, "session", "reset", "worker"),
          tether(home, "session", "frobnicate"),
          tether(home, "session", "status", "--session", "no spaces"),
          tether(home, "session", "enable", "worker", "--session", "global"),
          tether(home, "session", "status", "--workspace", join(root, "missing")),
        ]);
      for (const run of [unknown, unknownInSession]) {
        expect(run.code).toBe(1);
        expect(run.stdout).toBe("");
        expect(run.stderr).toContain(
          `unknown extension 'nosuch' (installed: ${INSTALLED.join(", ")}; built in: hooks)`,
        );
      }
      expect(query("select * from preferences where extension = 'nosuch'")).toEqual([]);

      for (const run of [bare, noName, resetGlobal, action, badId, reserved, noFolder]) {
        expect(run.code).toBe(2);
        expect(run.stdout).toBe("");
      }
      expect(bare.stderr).toContain("tether session: missing what to do: tether session status");
      expect(noName.stderr).toContain(
        "tether session: missing the extension name: tether session enable <name> [--session <id>]",
      );
      expect(resetGlobal.stderr).toContain("needs --session <id>");
      expect(action.stderr).toContain("unknown action 'frobnicate': expected status, enable, disable, reset");
      expect(badId.stderr).toContain("--session 'no spaces': expected a session id");
      expect(reserved.stderr).toContain("--session 'global': that name is reserved");
      expect(noFolder.stderr).toContain("not a folder");
      // None of them opened a session or wrote a preference.
      expect(query("select id from sessions where id in ('no spaces', 'global')")).toEqual([]);
      expect(query("select scope from preferences where scope = 'global' and extension = 'worker'")).toEqual([]);
    },
    SLOW,
  );

  test(
    "audit --hooks lists the traces a real session left, newest last, filtered by --session, --ext, --since and --limit",
    async () => {
      // A real session in this process: session_start (hooker and ctxadd add context), then a tool call hooker blocks.
      const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
      let blocked: Awaited<ReturnType<Session["callTool"]>>;
      try {
        const session = await Session.open(broker, { id: "traced", workspace });
        try {
          await session.fire("session_start", { source: "startup" });
          blocked = await session.callTool("run", JSON.stringify({ text: "rm -rf /", hook: "block" }));
        } finally {
          await session.close();
        }
      } finally {
        await broker.close();
      }
      expect(blocked.blockedBy).toBe("hooker");
      // An old trace of another session, for --since to leave out.
      const db = new Database(join(home, "tether.db"));
      try {
        db.prepare(
          "insert into hook_traces (session_id, event, subject, about_invocation_id, hook_invocation_id, extension, answer, detail, duration_ms, at) values ('old', 'tool_call', 'run', null, null, 'hooker', 'proceed', '', 1.5, ?)",
        ).run(Date.now() - 2 * 3_600_000);
      } finally {
        db.close();
      }

      const [all, filtered, recent, last, none, plain, badLimit, withDenied] = await Promise.all([
        tether(home, "audit", "--hooks", "--json"),
        tether(home, "audit", "--hooks", "--session", "traced", "--ext", "hooker"),
        tether(home, "audit", "--hooks", "--since", "1h", "--json"),
        tether(home, "audit", "--hooks", "--limit", "1", "--json"),
        tether(home, "audit", "--hooks", "--session", "nobody"),
        tether(home, "audit", "--json"),
        tether(home, "audit", "--hooks", "--limit", "none"),
        tether(home, "audit", "--hooks", "--denied"),
      ]);

      expect(all.code).toBe(0);
      const traces = parse<HookTraceEntry[]>(all);
      const traced = traces
        .filter((t) => t.session === "traced")
        .map((t) => [t.event, t.subject, t.extension, t.answer, t.detail]);
      expect(traced).toEqual(
        expect.arrayContaining([
          ["session_start", "", "hooker", "context", "hooker saw session traced start (startup)"],
          ["session_start", "", "ctxadd", "context", expect.any(String)],
          ["tool_call", "run", "hooker", "block", "hooker: rm -rf is not allowed"],
        ]),
      );
      const block = traces.find((t) => t.answer === "block")!;
      expect(block).toMatchObject({
        type: "hook",
        aboutInvocation: blocked.invocationId,
        hookInvocation: expect.any(Number),
        durationMs: expect.any(Number),
      });
      expect(traces.map((t) => t.at)).toEqual([...traces.map((t) => t.at)].sort((a, b) => a - b)); // newest last
      expect(traces[0]).toMatchObject({ session: "old" }); // the oldest row first

      expect(filtered.code).toBe(0);
      const lines = filtered.stdout.split("\n");
      expect(lines.length).toBeGreaterThanOrEqual(2);
      for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+Z traced hooker hook /);
      expect(filtered.stdout).toMatch(
        / traced hooker hook session_start → context: hooker saw session traced start \(startup\) \(\d+(\.\d)? ms\)/,
      );
      expect(filtered.stdout).toMatch(
        / traced hooker hook tool_call run → block: hooker: rm -rf is not allowed \(\d+(\.\d)? ms\)/,
      );

      const sinceRows = parse<HookTraceEntry[]>(recent);
      expect(sinceRows.length).toBe(traces.length - 1);
      expect(sinceRows.map((t) => t.session)).not.toContain("old");

      expect(parse<HookTraceEntry[]>(last)).toEqual([traces[traces.length - 1]]);
      expect(none).toMatchObject({ code: 0, stdout: "no hook traces" });

      // The plain audit keeps to invocations and capability calls; it has the blocked call's ledger row.
      const entries = parse<AuditEntry[]>(plain);
      expect(entries.map((e) => e.type as string)).not.toContain("hook");
      expect(entries).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: "invocation", session: "traced", name: "run", outcome: "blocked" }),
        ]),
      );

      expect(badLimit.code).toBe(2);
      expect(badLimit.stderr).toContain("--limit 'none': expected a whole number of rows, 1 or more");
      expect(withDenied.code).toBe(2);
      expect(withDenied.stderr).toContain("--hooks and --denied do not combine");
    },
    SLOW,
  );

  test(
    "audit --limit keeps the newest entries of the plain audit too, across the ledger and the capability audit",
    async () => {
      // Capability rows newer than every invocation, so the newest two of both tables together are these.
      const db = new Database(join(home, "tether.db"));
      try {
        const cap = db.prepare(
          "insert into cap_audit (invocation_id, session_id, extension, capability, target, decision, rule, bytes, at) values (null, 'late', 'worker', 'net.fetch', ?, 'denied', 'manifest:no-match', 0, ?)",
        );
        cap.run("https://a.example/", Date.now() + 1_000);
        cap.run("https://b.example/", Date.now() + 2_000);
      } finally {
        db.close();
      }
      const [all, two] = await Promise.all([
        tether(home, "audit", "--json"),
        tether(home, "audit", "--limit", "2", "--json"),
      ]);
      const entries = parse<AuditEntry[]>(all);
      expect(entries.length).toBeGreaterThan(2);
      expect(entries.filter((e) => e.type === "invocation").length).toBeGreaterThan(2);
      expect(parse<AuditEntry[]>(two)).toEqual(entries.slice(-2));
      expect(entries.slice(-2)).toEqual([
        expect.objectContaining({ target: "https://a.example/" }),
        expect.objectContaining({ target: "https://b.example/" }),
      ]);
    },
    SLOW,
  );
});
