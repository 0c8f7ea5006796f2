/**
 * Initializers (`[init]`, docs/initializers.md), over real brokers and
 * real jailed satellites on one home: an init runs once per approved version
 * before the extension's first invocation (not again in this broker, nor in a
 * second broker on the home); a failed one makes the extension inactive with
 * its reason and no stack, is not retried in the same broker and is by the
 * next `Broker.open`; one past its deadline is inactive with "passed its time
 * limit"; a manifest with `[init]` whose module exports no `init` is refused at
 * install; `tether approve` runs it and says how it went, `tether status` and
 * `tether review` show it, `tether serve` runs the pending ones at startup. Fixture: tests/integration/fixtures/initializers/seeder.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { kvRepository } from "../../broker/store/kv-repository.js";
import { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const FIXTURE = join(REPO, "tests/integration/fixtures/initializers/seeder");
const BIN = join(REPO, "bin", "tether.js");
const SLOW = 240_000;

let tmp: string;
let home: string;
const opened: Broker[] = [];

/** A broker on the shared home (closed after all). */
function open(): Broker {
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error", sink: () => {} }) });
  opened.push(broker);
  return broker;
}

/** A copy of the fixture as `name`, its version `version`, its manifest edited by `edit`. */
function variant(name: string, version: string, edit: (manifest: string) => string = (m) => m): string {
  const dir = join(tmp, "src", name);
  cpSync(FIXTURE, dir, { recursive: true });
  const manifest = readFileSync(join(dir, "manifest.toml"), "utf8")
    .replace('name = "seeder"', `name = "${name}"`)
    .replace('version = "1.0.0"', `version = "${version}"`);
  writeFileSync(join(dir, "manifest.toml"), edit(manifest));
  return dir;
}

function kvValue(broker: Broker, extension: string, key: string): unknown {
  const row = kvRepository(broker.store).get({ extension, session: null }, key);
  return row === null ? null : JSON.parse(row.value.toString("utf8"));
}

/** The invocations of `kind` the ledger holds for `extension`, as their outcomes. */
function invoked(broker: Broker, extension: string, kind: string): string[] {
  broker.ledger.flush();
  return (
    broker.store.sqlite
      .prepare("select outcome from invocations where extension = ? and kind = ? order by id")
      .all(extension, kind) as { outcome: string }[]
  ).map((r) => r.outcome);
}

async function read(broker: Broker, extension: string) {
  return broker.callTool(extension, "read", "{}", { session: "default" });
}

async function tether(args: readonly string[]): Promise<{ code: number | undefined; stdout: string; stderr: string }> {
  const result = await execa(process.execPath, [BIN, ...args, "--home", home], {
    cwd: REPO,
    reject: false,
    timeout: 120_000,
    stdin: "ignore",
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-init-"));
  home = join(tmp, "home");
  const broker = open();
  for (const [name, version] of [
    ["seeder", "1.0.0"],
    ["flaky", "1.0.0-flaky"],
  ] as const) {
    await broker.registry.install(variant(name, version));
    broker.registry.approve(name);
  }
  await broker.registry.install(
    variant("slow", "1.0.0-slow", (m) => m.replace("deadline_ms = 5000", "deadline_ms = 300")),
  );
  broker.registry.approve("slow");
}, SLOW);

afterAll(async () => {
  await Promise.all(opened.map((b) => b.destroy()));
  rmSync(tmp, { recursive: true, force: true });
});

test(
  "the init runs before the first call, once: not again in this broker, nor in a second broker on the home",
  async () => {
    const broker = opened[0]!;
    const first = await read(broker, "seeder");
    expect(first).toMatchObject({
      ok: true,
      value: { content: [{ type: "json", json: { seeded: { version: "1.0.0", reason: "start" }, runs: 1 } }] },
    });
    expect(kvValue(broker, "seeder", "seeded")).toEqual({ version: "1.0.0", reason: "start" });
    // Concurrent callers share the one run; a later call does not run it again.
    await Promise.all([read(broker, "seeder"), read(broker, "seeder")]);
    expect(invoked(broker, "seeder", "init")).toEqual(["ok"]);
    expect(await broker.initialize("seeder")).toEqual({ ran: false, ok: true, message: "seeded 1 note", ms: 0 });

    const second = open();
    expect(await read(second, "seeder")).toMatchObject({ ok: true, value: { content: [{ json: { runs: 1 } }] } });
    expect(await second.initialize("seeder")).toMatchObject({ ran: false, ok: true });
    expect(invoked(second, "seeder", "init")).toEqual(["ok"]);
    expect(kvValue(second, "seeder", "runs")).toBe(1);
  },
  SLOW,
);

test(
  "a failed init: the extension is inactive with the reason and no stack, not retried in this broker; the next Broker.open retries it",
  async () => {
    const broker = opened[0]!;
    const expected =
      "'flaky' is inactive: its initializer failed: Error: the seed file is missing. It runs again at the next start of the broker; fix it and reinstall, or see: tether logs flaky";
    const outcome = await read(broker, "flaky");
    expect(outcome).toEqual({ ok: false, error: { code: "inactive", msg: expected } });
    expect(JSON.stringify(outcome)).not.toMatch(/\bat .*:\d+|index\.ts|stack/);
    // Every kind is refused alike, and the init is not run again here.
    expect((await broker.callHook("flaky", "tool_call", "{}", { session: "default" })).outcome).toEqual({
      ok: false,
      error: { code: "inactive", msg: expected },
    });
    expect(await read(broker, "flaky")).toEqual({ ok: false, error: { code: "inactive", msg: expected } });
    expect(await broker.initialize("flaky")).toMatchObject({
      ran: false,
      ok: false,
      error: "Error: the seed file is missing",
    });
    expect(kvValue(broker, "flaky", "runs")).toBe(1);
    // A session's activation reports it as the reason the extension is inactive.
    const session = await Session.open(broker, { id: "init-session", workspace: tmp });
    try {
      const status = session.status().find((s) => s.name === "flaky");
      expect(status?.reason).toContain(expected);
    } finally {
      await session.close();
    }

    const restarted = open();
    expect(await read(restarted, "flaky")).toMatchObject({
      ok: true,
      value: { content: [{ json: { seeded: { version: "1.0.0-flaky", reason: "start" }, runs: 2 } }] },
    });
    expect(invoked(restarted, "flaky", "init")).toEqual(["crashed", "ok"]);
  },
  SLOW,
);

test(
  "an init past its deadline: inactive, its reason says it passed its time limit",
  async () => {
    const broker = opened[0]!;
    const outcome = await read(broker, "slow");
    expect(outcome).toMatchObject({ ok: false, error: { code: "inactive" } });
    if (outcome.ok) return;
    expect(outcome.error.msg).toBe(
      "'slow' is inactive: its initializer failed: init passed its time limit of 300 ms. It runs again at the next start of the broker; fix it and reinstall, or see: tether logs slow",
    );
  },
  SLOW,
);

test(
  "[init] with no exported `init` is refused at install by the served check (the dry boot)",
  async () => {
    const dir = variant("noinit", "1.0.0");
    writeFileSync(
      join(dir, "index.ts"),
      readFileSync(join(dir, "index.ts"), "utf8")
        .replace("export const init: Init", "const init: Init")
        .concat("\nvoid init;\n"),
    );
    const refused = await tether(["install", dir]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      "declared in manifest.toml but not exported from index.ts: init (export `init`, or remove [init])",
    );
  },
  SLOW,
);

test(
  "tether approve runs the init and says how it went; status and review show it",
  async () => {
    // A fresh version: a new approval pins new hashes, so its init runs again.
    const dir = variant("cli", "2.0.0");
    expect((await tether(["install", dir])).code).toBe(0);
    const review = await tether(["review", "cli"]);
    expect(`${review.stdout}${review.stderr}`).toContain(
      "Initializer: runs once per approved version, after its migrations, up to 5000 ms ([init]; docs/initializers.md)",
    );
    expect((await tether(["status"])).stdout).toMatch(/cli .*\n\s+init: not run yet/);
    const approved = await tether(["approve", "cli", "--yes"]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/^approved cli 2\.0\.0 \(no egress\)\ninit: ran in \d+\.\d s: seeded 1 note$/);
    expect((await tether(["status"])).stdout).toMatch(
      /\n\s+init: done for 2\.0\.0 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/,
    );

    const failing = variant("cli-flaky", "2.0.0-flaky");
    expect((await tether(["install", failing])).code).toBe(0);
    const refused = await tether(["approve", "cli-flaky", "--yes"]);
    expect(refused.code).toBe(0);
    expect(refused.stdout).toContain(
      "init failed: Error: the seed file is missing; 'cli-flaky' stays inactive until it succeeds (it runs again at the next start of a broker)",
    );
    expect((await tether(["status"])).stdout).toContain("init failed: Error: the seed file is missing");
  },
  SLOW,
);

test(
  "tether serve runs the pending initializers of approved extensions at startup, a line each",
  async () => {
    const broker = opened[0]!;
    await broker.registry.install(variant("pending", "3.0.0"));
    broker.registry.approve("pending");
    const child = spawn(process.execPath, [BIN, "serve", "--home", home, "--port", "0"], {
      cwd: REPO,
      env: { ...process.env, TETHER_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      const started = Date.now();
      while (
        !/tether serve: pending: init: ran in \d+\.\d s: seeded 1 note/.test(out) &&
        Date.now() - started < 60_000 &&
        child.exitCode === null
      )
        await new Promise((r) => setTimeout(r, 100));
      expect(out).toMatch(/tether serve: pending: init: ran in \d+\.\d s: seeded 1 note/);
      // Those done already are not run again (no line); one that failed in an earlier broker is retried.
      expect(out).not.toMatch(/tether serve: seeder:/);
      expect(out).toContain("tether serve: cli-flaky: init: ran in");
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
    expect(kvValue(broker, "pending", "seeded")).toEqual({ version: "3.0.0", reason: "start" });
  },
  SLOW,
);
