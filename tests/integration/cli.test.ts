/**
 * The real `tether` binary, run as a subprocess (`node bin/tether.js`) with a
 * fresh TETHER_HOME and no terminal on stdin: the operator's story from install
 * to uninstall, the audit trail, bad input and doctor.
 *
 * Every spawn pays tsx's start-up, so steps are grouped and independent spawns
 * run side by side. The story's tests share one home and run in order.
 */
import {
  appendFileSync,
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import Database from "better-sqlite3";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import type { AuditEntry } from "../../broker/operator/audit.js";
import { silentLogger } from "../../broker/base/log.js";
import { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const BIN = join(REPO, "bin", "tether.js");
/** Per test: a few spawns, each paying tsx start-up (seconds on a loaded machine). */
const SLOW = 90_000;

interface Run {
  readonly code: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `tether args...` with TETHER_HOME=home; stdin is not a terminal. */
async function tether(home: string, ...args: string[]): Promise<Run> {
  const result = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 45_000,
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

/** Copies manifests/<name> into `root`/src/<as>, so tests can edit it. */
function copyExtension(root: string, name: string, as = name): string {
  const dir = join(root, "src", as);
  mkdirSync(join(root, "src"), { recursive: true });
  cpSync(join(REPO, "manifests", name), dir, { recursive: true });
  return dir;
}

interface ListRow {
  name: string;
  version: string;
  status: string;
  description: string;
}

describe("the operator's story, in order, on one home", () => {
  let root: string;
  let home: string;
  let src: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "tether-cli-"));
    home = join(root, "home");
    src = copyExtension(root, "echo");
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  test(
    "install reports progress on stderr and leaves it pending; approve without a terminal asks for --yes",
    async () => {
      const install = await tether(home, "install", src);
      expect(install.code).toBe(0);
      expect(install.stderr).toContain(`… reading ${join(src, "manifest.toml")}`);
      expect(install.stderr).toContain("… bundling echo@1.0.0 (index.ts)");
      expect(install.stderr).toMatch(/… stored echo \(\d+ KiB artifact\)/);
      expect(install.stdout).toBe("installed echo 1.0.0: pending\nNext: tether review echo, then tether approve echo");

      // A declined approve writes nothing, so these three can run at once.
      const [approve, review, call] = await Promise.all([
        tether(home, "approve", "echo"),
        tether(home, "review", "echo"),
        tether(home, "call", "echo", "echo", '{"text":"hi"}'),
      ]);
      expect(approve.code).toBe(3);
      expect(approve.stdout).toBe("");
      expect(approve.stderr).toContain("status: pending"); // the review, shown before asking
      expect(approve.stderr).toContain("not approved: no terminal to confirm on; pass --yes to approve from a script");

      expect(review.code).toBe(0);
      const text = review.stdout;
      expect(text).toContain("echo 1.0.0 — Echoes its input back");
      expect(text).toContain("status: pending");
      expect(text).toContain("It can reach:\n  the network: nothing (no egress rules)");
      expect(text).toContain("files, environment, processes: nothing");
      expect(text).toContain("It adds 2 tools:\n  echo — Returns the text it was given.\n  count — Counts to n");
      expect(text).toContain("It hooks no events.");
      expect(text).toContain("Limits: memory 64 MiB, deadline 5000 ms per call, idle 300 s, storage 1048576 bytes");
      expect(text).toContain("To allow it: tether approve echo");

      expect(call.code).toBe(1);
      expect(call.stdout).toBe("");
      expect(call.stderr).toContain(
        "Extension 'echo' is not approved. Run: tether review echo, then tether approve echo",
      );
    },
    SLOW,
  );

  test(
    "approve --yes; call prints the answer, partials go to stderr; a tool's error answer exits 4",
    async () => {
      const approve = await tether(home, "approve", "echo", "--yes");
      expect(approve).toMatchObject({ code: 0, stdout: "approved echo 1.0.0 (no egress)" });
      const db = new Database(join(home, "tether.db"), { readonly: true });
      try {
        // One approval: the declined approve before it wrote none.
        expect(db.prepare("select extension, revoked_at as revokedAt from approvals").all()).toEqual([
          { extension: "echo", revokedAt: null },
        ]);
      } finally {
        db.close();
      }

      const [hi, count, bad] = await Promise.all([
        tether(home, "call", "echo", "echo", '{"text":"hi"}'),
        tether(home, "call", "echo", "count", '{"n":3}'),
        tether(home, "call", "echo", "echo", '{"text":5}'),
      ]);
      expect(hi).toMatchObject({ code: 0, stdout: "hi" });
      expect(count.code).toBe(0);
      expect(count.stdout).toBe('Counted to 3\n{"n":3}');
      expect(count.stderr).toContain("… counted 1 of 3\n… counted 2 of 3\n… counted 3 of 3");
      expect(bad.code).toBe(4);
      expect(bad.stderr).toContain("bad_arguments: tool 'echo': expected string at .text");
    },
    SLOW,
  );

  test(
    "an upgrade that widens: the call is refused naming tether review, review shows the diff, list says changed",
    async () => {
      appendFileSync(join(src, "manifest.toml"), '\n[net]\nallow = ["https://api.example.com"]\n');
      const install = await tether(home, "install", src, "--json");
      expect(install.code).toBe(0);
      expect(install.stderr).toBe(""); // no progress lines in --json mode
      expect(parse(install)).toMatchObject({
        name: "echo",
        version: "1.0.0",
        status: "changed",
        manifestHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });

      const [call, review, list] = await Promise.all([
        tether(home, "call", "echo", "echo", '{"text":"hi"}'),
        tether(home, "review", "echo"),
        tether(home, "list"),
      ]);
      expect(call.code).toBe(1);
      expect(call.stderr).toContain(
        "Extension 'echo' changed since it was approved. Run: tether review echo to see what changed, then tether approve echo",
      );

      expect(review.code).toBe(0);
      expect(review.stdout).toContain("status: changed");
      expect(review.stdout).toContain("the network: https://api.example.com   [NEW]");
      expect(review.stdout).toContain("CHANGED SINCE APPROVAL — this upgrade asks for MORE than was approved:");
      expect(review.stdout.split("\n")).toContain("  + network: https://api.example.com");
      expect(review.stdout).toContain("To allow it: tether approve echo   (narrow egress with --only <rule>)");

      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/^echo\s+1\.0\.0\s+changed\s+Echoes its input back/m);
    },
    SLOW,
  );

  test(
    "approve --only narrows to rules the manifest requests and refuses any other, naming what is requested",
    async () => {
      // The refused one writes nothing, so both can run at once.
      const [other, approve] = await Promise.all([
        tether(home, "approve", "echo", "--only", "https://other.example", "--yes"),
        tether(home, "approve", "echo", "--only", "https://api.example.com", "--yes"),
      ]);
      expect(other.code).toBe(1);
      expect(other.stderr).toContain(
        "--only https://other.example: not requested by 'echo' (it requests: https://api.example.com)",
      );

      expect(approve).toMatchObject({ code: 0, stdout: "approved echo 1.0.0 (egress: https://api.example.com)" });

      const [review, call] = await Promise.all([
        tether(home, "review", "echo", "--json"),
        tether(home, "call", "echo", "echo", '{"text":"again"}'),
      ]);
      expect(parse(review)).toMatchObject({
        name: "echo",
        status: "approved",
        requested: { net: ["https://api.example.com"], tools: ["count", "echo"], hooks: [] },
        approved: { net: ["https://api.example.com"] },
        diff: null,
        widens: false,
      });
      expect(call).toMatchObject({ code: 0, stdout: "again" });
    },
    SLOW,
  );

  test(
    "revoke: the next call fails saying revoked, list says revoked",
    async () => {
      const revoke = await tether(home, "revoke", "echo");
      expect(revoke).toMatchObject({ code: 0, stdout: "revoked echo; running satellites stop on their next call" });

      const [call, list] = await Promise.all([
        tether(home, "call", "echo", "echo", '{"text":"hi"}'),
        tether(home, "list", "--json"),
      ]);
      expect(call.code).toBe(1);
      expect(call.stderr).toContain(
        "Extension 'echo' was revoked. Run: tether review echo, then tether approve echo to allow it again",
      );
      expect(parse<ListRow[]>(list)).toEqual([
        {
          name: "echo",
          version: "1.0.0",
          status: "revoked",
          description: "Echoes its input back, with partial reports along the way.",
        },
      ]);
    },
    SLOW,
  );

  // BUG (broker/registry/review.ts, buildReview): the diff is computed whenever
  // status !== "approved", so a revoked but unchanged extension's review prints
  // "Changed since approval (nothing widened):" over an empty list. Fix: compute
  // the diff only when the approval's manifest or artifact hash differs from the
  // installed one (status "changed", or revoked after an upgrade).
  test(
    "review of a revoked, unchanged extension says it is revoked and shows no change",
    async () => {
      const review = await tether(home, "review", "echo");
      expect(review.code).toBe(0);
      expect(review.stdout).toContain("status: revoked");
      expect(review.stdout).not.toContain("Changed since approval");
      expect(review.stdout).not.toContain("CHANGED SINCE APPROVAL");
    },
    SLOW,
  );

  test(
    "audit lists the calls; --ext/--since filter; --denied holds only capability denials; rows left running are lost",
    async () => {
      // Rows the filters must leave out, and one a dead broker left running.
      const now = Date.now();
      const db = new Database(join(home, "tether.db"));
      try {
        const inv = db.prepare(
          "insert into invocations (session_id, extension, kind, name, strand, started_at, outcome) values (?, ?, 'tool', ?, '', ?, ?)",
        );
        inv.run("old", "echo", "old_call", now - 2 * 3_600_000, "ok");
        inv.run("s2", "other", "other_call", now, "ok");
        inv.run("s3", "echo", "interrupted", now, "running");
        db.prepare(
          "insert into cap_audit (invocation_id, session_id, extension, capability, target, decision, rule, bytes, at) values (null, 's3', 'echo', 'net.fetch', 'https://api.example.com/x', 'allowed', 'net.allow', 12, ?)",
        ).run(now);
      } finally {
        db.close();
      }

      const [all, filtered, denied] = await Promise.all([
        tether(home, "audit", "--json"),
        tether(home, "audit", "--ext", "echo", "--since", "1h"),
        tether(home, "audit", "--denied", "--json"),
      ]);
      expect(all.code).toBe(0);
      const entries = parse<AuditEntry[]>(all);
      const invocations = entries.filter((e) => e.type === "invocation");
      const cli = invocations.filter((e) => e.session === "cli").map((e) => [e.extension, e.kind, e.name, e.outcome]);
      expect(cli).toEqual(
        expect.arrayContaining([
          ["echo", "tool", "echo", "ok"],
          ["echo", "tool", "count", "ok"],
          ["echo", "tool", "echo", "bad_arguments"],
        ]),
      );
      expect(cli.filter(([, , name, outcome]) => name === "echo" && outcome === "ok")).toHaveLength(2); // "hi" and "again"
      expect(invocations.find((e) => e.name === "interrupted")).toMatchObject({ outcome: "lost" });
      expect(invocations.map((e) => e.name)).toEqual(expect.arrayContaining(["old_call", "other_call"]));
      expect(entries.filter((e) => e.type === "capability" && e.session === "s3")).toEqual([
        expect.objectContaining({
          extension: "echo",
          capability: "net.fetch",
          target: "https://api.example.com/x",
          decision: "allowed",
          rule: "net.allow",
          bytes: 12,
        }),
      ]);
      const ats = entries.map((e) => e.at);
      expect(ats).toEqual([...ats].sort((a, b) => a - b));

      expect(filtered.code).toBe(0);
      expect(filtered.stdout).toMatch(/ cli echo tool echo → ok \(\d+ ms\)/);
      expect(filtered.stdout).toMatch(/ cli echo tool count → ok \(\d+ ms\)/);
      expect(filtered.stdout).toContain(" s3 echo tool interrupted → lost");
      expect(filtered.stdout).toContain(
        " s3 echo cap net.fetch https://api.example.com/x → ALLOWED by net.allow (12 bytes)",
      );
      expect(filtered.stdout).not.toContain("old_call");
      expect(filtered.stdout).not.toContain("other");

      expect(denied.code).toBe(0);
      expect(parse(denied)).toEqual([]);
    },
    SLOW,
  );

  test(
    "uninstall: list is empty",
    async () => {
      const uninstall = await tether(home, "uninstall", "echo");
      expect(uninstall).toMatchObject({ code: 0, stdout: "uninstalled echo" });
      const list = await tether(home, "list");
      expect(list).toMatchObject({ code: 0, stdout: "no extensions installed" });
    },
    SLOW,
  );
});

/** A fresh temp folder for `fn`, removed after it. */
async function inTemp(fn: (root: string) => Promise<void>): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "tether-cli-"));
  try {
    await fn(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Installs and approves through the library, in this process (no CLI spawn). */
async function installApproved(home: string, dir: string, onlyNet?: string[]): Promise<void> {
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    await broker.registry.install(dir);
    broker.registry.approve(basename(dir), onlyNet !== undefined ? { onlyNet } : {});
  } finally {
    await broker.close();
  }
}

// These need no shared state: they run side by side (each on its own homes).
describe("bad input, doctor and known bugs, each on fresh homes", () => {
  test.concurrent(
    "an unknown command, a missing argument or an unknown option exits 2 with the usage hint",
    () =>
      inTemp(async (root) => {
        // One home each: two first opens of one fresh home at once race (see the report on broker/store/open.ts).
        const [unknown, review, option] = await Promise.all([
          tether(join(root, "h1"), "frobnicate"),
          tether(join(root, "h2"), "review"),
          tether(join(root, "h3"), "list", "--bogus"),
        ]);
        expect(unknown).toMatchObject({ code: 2, stdout: "" });
        expect(unknown.stderr).toContain("tether: unknown command 'frobnicate'. Run 'tether help'");
        expect(review).toMatchObject({ code: 2, stdout: "" });
        expect(review.stderr).toContain("tether review: missing the extension name: tether review <name>");
        expect(option).toMatchObject({ code: 2, stdout: "" });
        expect(option.stderr).toContain("'--bogus'");
        expect(option.stderr).toContain("Run 'tether help'");
      }),
    SLOW,
  );

  test.concurrent(
    "install refuses a manifest with a bad field or a tool whose parameters are not JSON Schema, naming file, field and tool",
    () =>
      inTemp(async (root) => {
        const badField = copyExtension(root, "echo", "bad-field");
        const manifest = join(badField, "manifest.toml");
        writeFileSync(manifest, readFileSync(manifest, "utf8").replace("memory_mb = 64", "memory_mb = 1"));
        const badSchema = copyExtension(root, "echo", "bad-schema");
        const manifest2 = join(badSchema, "manifest.toml");
        const text = readFileSync(manifest2, "utf8");
        const replaced = text.replace(/^parameters = .*$/m, 'parameters = { type = "strnig" }');
        expect(replaced).not.toBe(text);
        writeFileSync(manifest2, replaced);

        const [field, schema] = await Promise.all([
          tether(join(root, "h1"), "install", badField),
          tether(join(root, "h2"), "install", badSchema),
        ]);
        expect(field.code).toBe(1);
        expect(field.stderr).toContain(`tether install: ${manifest}: limits.memory_mb: `);
        expect(schema.code).toBe(1);
        expect(schema.stderr).toContain(
          `tether install: ${manifest2}: tool.0.parameters (tool 'echo') is not a valid JSON Schema`,
        );
      }),
    SLOW,
  );

  test.concurrent(
    "doctor exits 0 and names bubblewrap; --json and --home work",
    () =>
      inTemp(async (root) => {
        const other = join(root, "other-home");
        const [plain, json] = await Promise.all([
          tether(join(root, "home"), "doctor"),
          tether(join(root, "home"), "doctor", "--json", "--home", other),
        ]);
        expect(plain.code).toBe(0);
        expect(plain.stdout).toMatch(/^ok {3}sandbox: bubblewrap at \S+: both layers active/m);
        expect(plain.stdout).toMatch(/^ok {3}deno: /m);
        expect(plain.stdout).toMatch(
          new RegExp(
            `^ok {3}store: ${join(root, "home", "tether.db")}: journal wal, (\\d+) of \\1 migrations applied$`,
            "m",
          ),
        );
        // A root broker keeps them where the jail uid reaches them; any other, in private temp folders.
        expect(plain.stdout).toMatch(
          process.getuid?.() === 0
            ? /^ok {3}sockets: satellite sockets go in folders owned by the jail user under \/var\/lib\/tether-jail\/run/m
            : /^ok {3}sockets: satellite sockets go in private directories \(mode 700\)/m,
        );
        // Every jail layer is named, and none is missing here.
        for (const layer of ["launcher", "jail user", "seccomp", "cgroup", "mounts"])
          expect(plain.stdout).toMatch(new RegExp(`^ok {3}${layer}: `, "m"));
        expect(plain.stdout).toContain(`ok   hooks: no ${join(root, "home", "hooks.json")}`);
        expect(json.code).toBe(0);
        const checks = parse<Array<{ name: string; ok: boolean; detail: string }>>(json);
        expect(checks.map((c) => [c.name, c.ok])).toEqual([
          ["deno", true],
          ["sandbox", true],
          ["launcher", true],
          ["jail user", true],
          ["seccomp", true],
          ["cgroup", true],
          ["host-side jails", true],
          ["mounts", true],
          ["store", true],
          ["artifacts", true],
          ["secrets", true],
          ["home", true],
          ["hooks", true],
          ["policy", true],
          ["sockets", true],
        ]);
        expect(checks.find((c) => c.name === "store")!.detail).toContain(join(other, "tether.db"));
      }),
    SLOW,
  );

  test.concurrent(
    "doctor fails on a hooks.json that does not parse and on a home others can write, naming the fix",
    () =>
      inTemp(async (root) => {
        const home = join(root, "home");
        mkdirSync(home, { recursive: true });
        writeFileSync(join(home, "hooks.json"), '{"hooks":{"PreToolUse":[{"hooks":[{"type":"prompt"}]}]}}');
        chmodSync(home, 0o777);
        const run = await tether(home, "doctor");
        expect(run.code).toBe(1);
        expect(run.stdout).toContain(
          `FAIL hooks: ${join(home, "hooks.json")}: hooks.PreToolUse.0.hooks.0.type: expected "command"`,
        );
        expect(run.stdout).toContain(
          `FAIL home: ${home} is writable by others (mode 777): anyone who can write there can swap an approved artifact. Run: chmod go-w ${home}`,
        );
      }),
    SLOW,
  );

  test.concurrent(
    "doctor warns of a hooks.json matcher that matches none of the installed tools, naming the mcp_server to set",
    () =>
      inTemp(async (root) => {
        const home = join(root, "home");
        await installApproved(home, copyExtension(root, "weather"));
        const group = (matcher: string) => ({ matcher, hooks: [{ type: "command", command: "true" }] });
        writeFileSync(
          join(home, "hooks.json"),
          JSON.stringify({ hooks: { PreToolUse: [group("mcp__tether__fetch_url"), group("mcp__github__.*")] } }),
        );
        const run = await tether(home, "doctor");
        const line = run.stdout.split("\n").find((l) => l.includes(" hooks: ")) ?? "";
        expect(line).toMatch(/^ok {3}hooks: 2 command hooks; warning: /);
        expect(line).toContain('hooks.PreToolUse.1.matcher "mcp__github__.*" matches none of the tools here');
        expect(line).toContain('set "mcp_server": "github" in hooks.json');
        // The group written with Tether's MCP name matches fetch_url: no warning for it.
        expect(line).not.toContain("hooks.PreToolUse.0");
      }),
    SLOW,
  );

  test.concurrent(
    "audit --denied lists a refused capability call and nothing else",
    () =>
      inTemp(async (root) => {
        const home = join(root, "home");
        await installApproved(home, copyExtension(root, "weather"));
        const call = await tether(home, "call", "weather", "fetch_url", '{"url":"https://example.com/"}');
        expect(call.code).toBe(4); // the tool answered its refusal
        expect(call.stderr).toContain("https://example.com/");
        // The ledger also holds the fetch_url invocation: --denied leaves it out.
        const denied = await tether(home, "audit", "--denied", "--json");
        expect(parse(denied)).toEqual([
          expect.objectContaining({
            type: "capability",
            session: "cli",
            extension: "weather",
            capability: "net.fetch",
            target: "https://example.com/",
            decision: "denied",
          }),
        ]);
      }),
    SLOW,
  );

  // BUG (broker/registry/review.ts, renderReview, the `the network:` loop): a
  // requested rule the operator left out with --only is listed under "It can
  // reach" and tagged [NEW] although the approval covers this very manifest: it
  // is neither reachable nor new. Fix: tag [NEW] only rules in `review.diff.addedNet`,
  // and when `review.approved` lacks a rule say "(requested, not granted)".
  test.concurrent(
    "review of an approval narrowed with --only says which requested rules are not granted, not [NEW]",
    () =>
      inTemp(async (root) => {
        const home = join(root, "home");
        const src = copyExtension(root, "echo");
        appendFileSync(
          join(src, "manifest.toml"),
          '\n[net]\nallow = ["https://api.example.com", "https://cdn.example.com"]\n',
        );
        await installApproved(home, src, ["https://api.example.com"]);
        const review = await tether(home, "review", "echo");
        expect(review.stdout).toContain("status: approved");
        const cdn = review.stdout.split("\n").find((line) => line.includes("https://cdn.example.com"));
        expect(cdn).toBeDefined();
        expect(cdn).not.toContain("[NEW]");
        expect(cdn).toContain("not granted");
      }),
    SLOW,
  );

  // BUG (broker/store/ledger.ts, the Ledger constructor): every broker that opens
  // the store marks EVERY "running" row "lost", including the calls another live
  // broker has in flight. Any `tether` command (audit, list...) run during a call
  // relabels it "lost" until that call finishes. Fix: record the owner of each row
  // (a migration adding `broker_pid`, plus a start time or random broker id against
  // pid reuse) and sweep only rows whose owner is gone (`process.kill(pid, 0)`
  // throws ESRCH); the store is a local file, so owners share the host.
  test.concurrent(
    "a call in flight in another broker stays running in tether audit; only a dead broker's rows are lost",
    () =>
      inTemp(async (root) => {
        const home = join(root, "home");
        const src = copyExtension(root, "misbehave");
        const manifest = join(src, "manifest.toml");
        writeFileSync(manifest, readFileSync(manifest, "utf8").replace("deadline_ms = 2000", "deadline_ms = 60000"));
        await installApproved(home, src);
        // A live broker (this process) with a call in flight: its ledger row is written before the call awaits.
        const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
        const pending = broker
          .callTool("misbehave", "sleep", '{"ms":60000}', { session: "live" })
          .catch(() => undefined);
        try {
          const audit = await tether(home, "audit", "--session", "live", "--json");
          expect(audit.code).toBe(0);
          expect(parse<AuditEntry[]>(audit)).toEqual([
            expect.objectContaining({ type: "invocation", name: "sleep", outcome: "running" }),
          ]);
        } finally {
          await broker.destroy();
          await pending;
        }
      }),
    SLOW,
  );
});

// `tether call` used to call the broker directly: a guard extension's hooks, which block a call
// made through the library's Session, `tether serve` and `tether mcp`, let the same call through.
describe("tether call goes through the hook bus", () => {
  const BUS = join(REPO, "tests/integration/fixtures/bus");
  const BLOCKED = JSON.stringify({ text: "rm -rf /", hook: "block" });

  test.concurrent(
    "a hook blocks the CLI's call exactly as the library's; --no-hooks lets it through and the audit says so",
    () =>
      inTemp(async (root) => {
        const home = join(root, "home");
        // hooker guards worker's tools (tool_call) and capability calls (cap_call, once a host is flagged).
        const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
        // The hooks are shown only what the policy allows: worker's rule naming 127.0.0.1 (nothing
        // listens on its port 443), with loopback allowed by the operator.
        writeFileSync(join(broker.home, "policy.toml"), "[net]\nallow_private = true\n");
        let library: Awaited<ReturnType<Session["callTool"]>>;
        try {
          for (const name of ["hooker", "worker"]) {
            await broker.registry.install(join(BUS, name));
            broker.registry.approve(name);
          }
          const session = await Session.open(broker, { id: "lib", workspace: root });
          try {
            library = await session.callTool("run", BLOCKED);
            await session.runCommand("/flag 127.0.0.1");
          } finally {
            await session.close();
          }
        } finally {
          await broker.close();
        }
        expect(library.outcome).toEqual({
          ok: false,
          error: { code: "blocked", msg: "Blocked by 'hooker': hooker: rm -rf is not allowed" },
        });

        const [blocked, blockedJson, capBlocked, elsewhere] = await Promise.all([
          tether(home, "call", "worker", "run", BLOCKED),
          tether(home, "call", "worker", "run", BLOCKED, "--session", "cli-json", "--json"),
          tether(
            home,
            "call",
            "worker",
            "fetch",
            JSON.stringify({ url: "https://127.0.0.1/x" }),
            "--session",
            "cli-cap",
            "--workspace",
            root,
          ),
          tether(home, "call", "hooker", "run", '{"text":"hi"}', "--session", "cli-elsewhere"),
        ]);
        // tool_call: the same refusal, in the same words, as through the library.
        expect(blocked.code).toBe(4);
        expect(blocked.stdout).toBe("");
        expect(blocked.stderr).toContain(`blocked: ${(library.outcome as { error: { msg: string } }).error.msg}`);
        expect(parse(blockedJson)).toEqual(library.outcome);
        // cap_call: the hook refuses worker's net.fetch inside the CLI's call.
        expect(capBlocked.code).toBe(0);
        expect(capBlocked.stdout).toContain("Blocked by a hook: hooker: 127.0.0.1 is flagged by the operator");
        expect(capBlocked.stdout).toContain("(rule: hook:hooker)");
        // The tool is addressed by extension and name: another extension's tool is named, not called.
        expect(elsewhere.code).toBe(4);
        expect(elsewhere.stderr).toContain(
          "unknown_tool: 'hooker' serves no tool 'run'; in session 'cli-elsewhere' it is served by 'worker'. Run: tether call worker run",
        );

        const bypass = await tether(home, "call", "worker", "run", BLOCKED, "--no-hooks");
        expect(bypass).toMatchObject({ code: 0, stdout: "ran: rm -rf / [block]" });

        const [audit, text, usage] = await Promise.all([
          tether(home, "audit", "--session", "cli", "--json"),
          tether(home, "audit", "--session", "cli"),
          tether(home, "call", "worker", "run", BLOCKED, "--no-hooks", "--workspace", root),
        ]);
        const calls = parse<AuditEntry[]>(audit).filter((e) => e.type === "invocation" && e.kind === "tool");
        expect(calls.map((e) => e.type === "invocation" && [e.extension, e.name, e.outcome, e.hooksBypassed])).toEqual([
          ["worker", "run", "blocked", false],
          ["worker", "run", "ok", true],
        ]);
        expect(text.stdout).toMatch(/ cli worker tool run → blocked \(\d+ ms\)\n/);
        expect(text.stdout).toMatch(/ cli worker tool run → ok \(\d+ ms\) \[hooks bypassed: --no-hooks\]/);
        expect(usage.code).toBe(2);
        expect(usage.stderr).toContain("--workspace has no use with --no-hooks");
      }),
    SLOW,
  );
});
