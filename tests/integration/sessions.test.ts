/**
 * Sessions and bundle activation over real satellites: each activation
 * failure (failed boot, served/declared mismatch, name collision, missing or
 * lost requirement, lost approval) produces the documented state, dependents
 * go inactive with a reason naming the root, unrelated extensions keep working;
 * preferences apply on reload, a failed apply keeps the wish saved for retry;
 * the built-in `hooks` extension runs real command hooks through the same bus.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { Session, type ExtensionStatus } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const FIXTURES = join(REPO, "tests/integration/fixtures/bus");

let tmp: string;
let broker: Broker;
const open: Session[] = [];

/** Copies a fixture under another name, editing its manifest. */
function variant(
  fixture: string,
  name: string,
  edit: (manifest: string) => string = (m) => m,
  editCode: (code: string) => string = (c) => c,
): string {
  const dir = join(tmp, "src", name);
  mkdirSync(join(tmp, "src"), { recursive: true });
  cpSync(join(FIXTURES, fixture), dir, { recursive: true });
  const file = join(dir, "manifest.toml");
  const text = edit(readFileSync(file, "utf8").replace(/^name = ".*"$/m, `name = ${JSON.stringify(name)}`));
  writeFileSync(file, text);
  const code = join(dir, "index.ts");
  writeFileSync(code, editCode(readFileSync(code, "utf8")));
  return dir;
}

async function install(dir: string): Promise<void> {
  const { installed } = await broker.registry.install(dir);
  broker.registry.approve(installed.manifest.name);
}

async function openSession(id: string): Promise<Session> {
  const session = await Session.open(broker, { id, workspace: tmp });
  open.push(session);
  return session;
}

function byName(status: readonly ExtensionStatus[]): Record<string, { state: string; reason: string | null }> {
  return Object.fromEntries(status.map((s) => [s.name, { state: s.state, reason: s.reason }]));
}

function text(outcome: { ok: boolean; value?: unknown }): string {
  const content = (outcome.value as { content?: { type: string; text?: string }[] } | undefined)?.content ?? [];
  return content.map((c) => c.text ?? "").join("");
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-sessions-"));
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: createLogger({ level: "error" }) });
  for (const name of ["worker", "hooker", "broken", "needs-broken", "mismatch"]) await install(join(FIXTURES, name));
  // Collides with worker's tool `run`; priority 5 puts it after worker (0), so it is the one made inactive.
  await install(
    variant("worker", "worker-two", (m) => m.replace('entry = "index.ts"', 'entry = "index.ts"\npriority = 5')),
  );
  // Requires worker: inactive whenever worker is.
  await install(
    variant(
      "needs-broken",
      "needs-worker",
      (m) =>
        m
          .replace('requires = ["broken"]', 'requires = ["worker"]')
          .replace('name = "dependent"', 'name = "dependent_w"'),
      (c) => c.replace("dependent:", "dependent_w:"),
    ),
  );
  // Requires something never installed.
  await install(
    variant(
      "needs-broken",
      "needs-ghost",
      (m) =>
        m
          .replace('requires = ["broken"]', 'requires = ["ghost"]')
          .replace('name = "dependent"', 'name = "dependent_g"'),
      (c) => c.replace("dependent:", "dependent_g:"),
    ),
  );
});

afterAll(async () => {
  for (const s of open) await s.close();
  await broker?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe("bundle activation", () => {
  let status: Record<string, { state: string; reason: string | null }>;
  let session: Session;

  beforeAll(async () => {
    session = await openSession("act-1");
    status = byName(session.status());
  });

  test("a failed boot makes the extension inactive with the boot's error, kept as wanted for the next reload", () => {
    expect(status["broken"]?.state).toBe("inactive");
    expect(status["broken"]?.reason).toMatch(
      /^failed to start \(boot_failed\): Satellite 'broken' exited with code 1 before saying hello.*broken on purpose: missing configuration/s,
    );
    expect(status["broken"]?.reason).toMatch(/still wanted: the next reload retries it\)$/);
  });

  test("an extension that requires a failed one is inactive with a reason naming the chain and the root", () => {
    expect(status["needs-broken"]?.state).toBe("inactive");
    expect(status["needs-broken"]?.reason).toMatch(
      /^needs 'broken' \(needs-broken → broken\), which is inactive: failed to start \(boot_failed\)/,
    );
  });

  test("a served/declared mismatch is an activation failure naming both lists", () => {
    expect(status["mismatch"]?.reason).toMatch(
      /failed to start \(served_mismatch\): Extension 'mismatch' is broken: the manifest declares tools \[one, two\].*serves tools \[one\]/,
    );
  });

  test("a tool name collision leaves the later extension (registry order) inactive whole", () => {
    expect(status["worker-two"]).toEqual({
      state: "inactive",
      reason: "its tool 'run' collides with 'worker', which comes earlier in registry order",
    });
    expect(status["worker"]?.state).toBe("active");
  });

  test("a requirement that is not installed names it", () => {
    expect(status["needs-ghost"]?.reason).toBe("requires 'ghost', which is not installed (needs-ghost → ghost)");
  });

  test("unrelated extensions keep working, and the built-in hooks extension is off by default", async () => {
    expect(status["hooker"]?.state).toBe("active");
    expect(status["needs-worker"]?.state).toBe("active");
    expect(status["hooks"]).toEqual({
      state: "disabled",
      reason: "off by default; enable it with: tether session enable hooks",
    });
    expect(text((await session.callTool("dependent_w", "{}")).outcome)).toBe("dependent ran");
  });

  test("a tool of an inactive extension is answered `inactive` with the reason, not unknown_tool", async () => {
    const report = await session.callTool("dependent", "{}");
    expect(report.outcome.ok).toBe(false);
    expect(!report.outcome.ok && report.outcome.error.code).toBe("inactive");
    expect(!report.outcome.ok && report.outcome.error.msg).toMatch(
      /^The tool 'dependent' belongs to 'needs-broken', which is inactive in this session: needs 'broken'/,
    );
  });

  test("a lost approval removes the extension and its dependents on the next call; the rest keep working", async () => {
    const other = await openSession("act-lost");
    expect(byName(other.status())["needs-worker"]?.state).toBe("active");
    broker.registry.revoke("worker");
    try {
      const now = byName(other.status());
      expect(now["worker"]?.state).toBe("inactive");
      expect(now["worker"]?.reason).toMatch(/was revoked/);
      expect(now["needs-worker"]?.reason).toMatch(
        /^needs 'worker' \(needs-worker → worker\), which is inactive: Extension 'worker' was revoked/,
      );
      expect(now["hooker"]?.state).toBe("active");
      expect((await other.callTool("run", '{"text":"x"}')).outcome).toMatchObject({
        ok: false,
        error: { code: "inactive" },
      });
    } finally {
      broker.registry.approve("worker");
    }
    // Approved again: the session does not take it back on its own; reload does.
    const reloaded = await other.reload();
    expect(reloaded.activated).toEqual(expect.arrayContaining(["worker", "needs-worker"]));
    expect(text((await other.callTool("run", '{"text":"back"}')).outcome)).toBe("ran: back");
  });
});

describe("preferences and reload", () => {
  test("a session override disables an extension in that session only; reload applies it", async () => {
    const a = await openSession("pref-a");
    const b = await openSession("pref-b");
    expect(text((await a.callTool("run", '{"text":"1"}')).outcome)).toBe("ran: 1");

    a.prefer("worker", false);
    // Saved, not applied until reload.
    expect(byName(a.status())["worker"]?.state).toBe("active");
    const report = await a.reload();
    expect(report.deactivated).toEqual(expect.arrayContaining(["worker", "needs-worker"]));
    expect(report.activated).toEqual(["worker-two"]);
    const status = byName(a.status());
    expect(status["worker"]).toEqual({ state: "disabled", reason: "disabled in this session" });
    expect(status["needs-worker"]?.reason).toMatch(/^needs 'worker'.*disabled in this session/);
    // worker-two no longer collides: it becomes active in a.
    expect(status["worker-two"]?.state).toBe("active");
    expect(byName(b.status())["worker"]?.state).toBe("active");
    expect(new Preferences(broker.store).effective("pref-a", "worker")).toEqual({ enabled: false, source: "session" });
  });

  test("a failed apply leaves the wish saved and says why; a retry after the fix activates it", async () => {
    const s = await openSession("pref-retry");
    const dir = variant("broken", "late-bloomer");
    await install(dir);
    const first = await s.reload();
    expect(first.failed.map((f) => f.name)).toContain("late-bloomer");
    expect(byName(s.status())["late-bloomer"]?.reason).toMatch(
      /failed to start \(boot_failed\).*still wanted: the next reload retries it/s,
    );
    // Fix it: the module no longer throws.
    writeFileSync(join(dir, "index.ts"), readFileSync(join(dir, "index.ts"), "utf8").replace(/^if .*throw.*$/m, ""));
    await install(dir);
    const second = await s.reload();
    expect(second.activated).toContain("late-bloomer");
    expect(text((await s.callTool("never", "{}")).outcome)).toBe("unreachable");
  });

  test("the global default applies to sessions without an override; the built-in hooks extension turns on", async () => {
    const prefs = new Preferences(broker.store);
    prefs.setGlobal("hooks", true);
    try {
      const s = await openSession("pref-global");
      expect(byName(s.status())["hooks"]).toEqual({ state: "active", reason: null });
    } finally {
      prefs.setGlobal("hooks", false);
    }
  });
});

describe("calling from a harness", () => {
  let session: Session;
  beforeAll(async () => {
    session = await openSession("harness-1");
  });

  test("a second open of a live session's id is refused; after close it opens again", async () => {
    await expect(Session.open(broker, { id: "harness-1", workspace: tmp })).rejects.toThrow(
      "Session 'harness-1' is already open on this broker; close it first or use another id",
    );
    const again = await openSession("harness-again");
    await again.close();
    const reopened = await openSession("harness-again");
    expect(reopened.status().some((s) => s.state === "active")).toBe(true);
  });

  test("stream() yields every partial in order, then the report", async () => {
    const steps: string[] = [];
    for await (const step of session.stream("ticks", '{"n":3}'))
      steps.push(step.type === "partial" ? step.text : `result: ${text(step.result.outcome)}`);
    expect(steps).toEqual(["tick 1", "tick 2", "tick 3", "result: ticked 3"]);
  });

  test("leaving the loop early cancels the call: the satellite's ctx.signal aborts and it keeps serving", async () => {
    const seen: string[] = [];
    for await (const step of session.stream("ticks", '{"n":200}')) {
      if (step.type === "partial") seen.push(step.text);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual(["tick 1", "tick 2"]);
    expect(text((await session.callTool("run", '{"text":"still here"}')).outcome)).toBe("ran: still here");
  });

  test("an AbortSignal cancels a running call: it ends cancelled", async () => {
    const report = await session.callTool("ticks", '{"n":200}', { signal: AbortSignal.timeout(150) });
    expect(report.outcome).toMatchObject({ ok: false, error: { code: "cancelled" } });
  });

  test("destroy() aborts an open call at once and refuses later ones", async () => {
    const doomed = await openSession("harness-doomed");
    let ticking!: () => void;
    const ticked = new Promise<void>((resolve) => (ticking = resolve));
    const pending = doomed.callTool("ticks", '{"n":200}', { onReport: () => ticking() });
    await ticked; // the call is running in the satellite
    await doomed.destroy();
    // Ended by the destroy (200 ticks would end `ticked 200`), as the message says.
    const report = await pending;
    expect(report.outcome.ok).toBe(false);
    expect(!report.outcome.ok && report.outcome.error).toEqual({
      code: "closed",
      msg: "The satellite of 'worker' was stopped: its session was destroyed during 'ticks'",
    });
    await expect(doomed.callTool("run", '{"text":"x"}')).rejects.toThrow("Session 'harness-doomed' is closed");
  });

  test("a revocation stops a running call: it ends not_approved, naming who revoked it (the extension did not crash)", async () => {
    const session = await openSession("harness-revoked");
    let ticking!: () => void;
    const ticked = new Promise<void>((resolve) => (ticking = resolve));
    const pending = session.callTool("ticks", '{"n":200}', { onReport: () => ticking() });
    await ticked; // the call is running in the satellite
    broker.registry.revoke("worker", { by: "carol" }); // the registry's change event stops the satellite now
    const report = await pending;
    expect(!report.outcome.ok && report.outcome.error).toEqual({
      code: "not_approved",
      msg: "The satellite of 'worker' was stopped: its approval was revoked by carol during 'ticks'",
    });
    broker.registry.approve("worker");
    expect((await session.callTool("run", '{"text":"again"}')).outcome.ok).toBe(true);
    await session.close();
  });
});

test("closing a session after its broker is harmless; a closed session refuses calls", async () => {
  const other = Broker.open({ ...envOptions(), home: join(tmp, "home2"), log: createLogger({ level: "error" }) });
  const s = await Session.open(other, { id: "late-close", workspace: tmp });
  await other.close();
  await expect(s.close()).resolves.toEqual([]);
  await expect(s.callTool("run", "{}")).rejects.toThrow("Session 'late-close' is closed");
});

describe("the built-in hooks extension over real command hooks", () => {
  let session: Session;
  const log = () => join(tmp, "hooks.log");

  beforeAll(async () => {
    const home = broker.home;
    const script = join(tmp, "guard.sh");
    writeFileSync(
      script,
      [
        "#!/bin/sh",
        "input=$(cat)",
        `printf '%s\\n' "$input" >> ${JSON.stringify(log())}`,
        'case "$input" in *"rm -rf"*) echo "no rm -rf here (from guard.sh)" >&2; exit 2;; esac',
        "exit 0",
      ].join("\n"),
    );
    chmodSync(script, 0o755);
    writeFileSync(
      join(home, "hooks.json"),
      JSON.stringify({
        hooks: {
          PreToolUse: [{ matcher: "run", hooks: [{ type: "command", command: script }] }],
          SessionStart: [{ hooks: [{ type: "command", command: "echo 'from SessionStart: be terse'" }] }],
          SessionEnd: [{ hooks: [{ type: "command", command: `echo ended >> ${JSON.stringify(log())}` }] }],
        },
      }),
    );
    session = await openSession("cmd-hooks");
    session.prefer("hooks", true);
    await session.reload();
  });

  afterAll(() => {
    rmSync(join(broker.home, "hooks.json"), { force: true });
  });

  test("it is asked first (the operator's word first) and a PreToolUse exit 2 blocks with stderr as the reason", async () => {
    const report = await session.callTool("run", '{"text":"rm -rf /"}');
    expect(report.outcome).toEqual({
      ok: false,
      error: { code: "blocked", msg: "Blocked by 'hooks': no rm -rf here (from guard.sh)" },
    });
    expect(report.trace[0]?.extension).toBe("hooks");
    const input = JSON.parse(readFileSync(log(), "utf8").trim().split("\n").pop()!) as Record<string, unknown>;
    expect(input).toMatchObject({
      hook_event_name: "PreToolUse",
      tool_name: "run",
      tool_input: { text: "rm -rf /" },
      session_id: "cmd-hooks",
      cwd: tmp,
    });
  });

  test("the matcher decides: another tool is not asked", async () => {
    const lines = readFileSync(log(), "utf8").split("\n").length;
    expect(text((await session.callTool("dependent_w", "{}")).outcome)).toBe("dependent ran");
    expect(readFileSync(log(), "utf8").split("\n").length).toBe(lines);
  });

  test("SessionStart stdout becomes context", async () => {
    const composed = await session.fire("session_start", { source: "startup" });
    expect(composed.context[0]).toBe("from SessionStart: be terse");
  });

  test("a hooks.json that does not parse makes the extension inactive at the next reload, naming the field", async () => {
    const s = await openSession("cmd-broken");
    s.prefer("hooks", true);
    const file = join(broker.home, "hooks.json");
    const good = readFileSync(file, "utf8");
    writeFileSync(file, JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ type: "prompt" }] }] } }));
    try {
      await s.reload();
      expect(byName(s.status())["hooks"]?.reason).toMatch(
        /hooks\.json: hooks\.PreToolUse\.0\.hooks\.0\.type: expected "command"/,
      );
    } finally {
      writeFileSync(file, good);
    }
  });

  test("SessionEnd hooks run when the session closes", async () => {
    await session.close();
    expect(readFileSync(log(), "utf8").trim().split("\n").pop()).toBe("ended");
  });
});

describe("hooks.json matchers written for Claude Code (mcp__<server>__<tool>)", () => {
  const file = () => join(broker.home, "hooks.json");
  const seen = () => join(tmp, "claude-names.log");

  afterEach(() => rmSync(file(), { force: true }));

  /** A hooks.json whose one PreToolUse group logs its stdin and blocks. */
  function writeHooks(matcher: string, extra: Record<string, unknown> = {}): void {
    const script = join(tmp, "claude-guard.sh");
    writeFileSync(
      script,
      [
        "#!/bin/sh",
        `cat >> ${JSON.stringify(seen())}`,
        `echo >> ${JSON.stringify(seen())}`,
        "echo 'held by the MCP-name matcher' >&2",
        "exit 2",
      ].join("\n"),
    );
    chmodSync(script, 0o755);
    writeFileSync(
      file(),
      JSON.stringify({ ...extra, hooks: { PreToolUse: [{ matcher, hooks: [{ type: "command", command: script }] }] } }),
    );
  }

  async function sessionWithHooks(id: string): Promise<{ session: Session; notes: readonly string[] }> {
    const session = await openSession(id);
    session.prefer("hooks", true);
    const { notes } = await session.reload();
    return { session, notes };
  }

  const lastInput = () =>
    JSON.parse(readFileSync(seen(), "utf8").trim().split("\n").filter(Boolean).pop()!) as Record<string, unknown>;

  test("a matcher naming the tool as Claude Code shows it holds a jailed call, and the script sees that name", async () => {
    writeHooks("mcp__tether__run");
    const { session, notes } = await sessionWithHooks("cc-names");
    expect(notes).toEqual([]);
    const report = await session.callTool("run", '{"text":"x"}');
    expect(report.outcome).toEqual({
      ok: false,
      error: { code: "blocked", msg: "Blocked by 'hooks': held by the MCP-name matcher" },
    });
    expect(lastInput()).toMatchObject({ tool_name: "mcp__tether__run", hook_event_name: "PreToolUse" });
    // Another tool is not matched under either name.
    expect(text((await session.callTool("dependent_w", "{}")).outcome)).toBe("dependent ran");
  });

  test("mcp_server names the server the harness gave tether mcp", async () => {
    writeHooks("^mcp__my-tools__", { mcp_server: "my-tools" });
    const { session, notes } = await sessionWithHooks("cc-server");
    expect(notes).toEqual([]);
    expect((await session.callTool("run", '{"text":"x"}')).outcome).toMatchObject({ ok: false });
    expect(lastInput()["tool_name"]).toBe("mcp__my-tools__run");
  });

  test("a matcher that can match none of the session's tools is a note at load, saying what to write", async () => {
    writeHooks("mcp__github__.*");
    const { session, notes } = await sessionWithHooks("cc-nothing");
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('hooks.PreToolUse.0.matcher "mcp__github__.*" matches none of the tools here');
    expect(notes[0]).toContain('set "mcp_server": "github" in hooks.json');
    // And it indeed holds nothing.
    expect(text((await session.callTool("run", '{"text":"x"}')).outcome)).toBe("ran: x");
  });
});
