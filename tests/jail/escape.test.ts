/**
 * The jail escape suite (`make jail-test`): every case of tests/jail/cases.ts
 * attempted from inside a real jailed satellite (bubblewrap + Deno flags), its
 * refusal asserted, and a verdict recorded. The last test fails if any case
 * has no verdict. docs/jail.md shows the same table.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SatelliteSlot } from "../../broker/satellite/slot.js";
import { REPO, bundleToTemp, slotFor, type Bundled } from "../support/satellites.js";
import {
  CASES,
  CASE_IDS,
  docsRow,
  type AttemptCase,
  type CaseEnv,
  type Group,
  type HostCase,
  type JailCase,
} from "./cases.js";
import { FIXTURE, Listeners, attempt, hostFiles, jailView, type HostFiles, type Seen } from "./harness.js";

const DOCS = join(REPO, "docs/jail.md");
const verdicts = new Map<string, string>();

let bundled: Bundled;
let artifactCode: string;
let files: HostFiles;
let listeners: Listeners;
const slots: SatelliteSlot[] = [];
const cleanups: Array<() => void> = [];

function open(b: Bundled, sandbox: "bwrap" | "none" = "bwrap"): SatelliteSlot {
  const slot = slotFor(b, { sandbox });
  slots.push(slot);
  return slot;
}

function inGroup<K extends JailCase["kind"]>(group: Group, kind: K): Array<Extract<JailCase, { kind: K }>> {
  return CASES.filter((c): c is Extract<JailCase, { kind: K }> => c.group === group && c.kind === kind);
}

interface Where {
  readonly slot: SatelliteSlot;
  readonly peer?: SatelliteSlot;
  readonly artifact: string;
  readonly sandbox: "bwrap" | "none";
}

function envFor(where: Where): CaseEnv {
  const live = where.slot.process?.state === "ready";
  return {
    slot: where.slot,
    peer: where.peer ?? null,
    jail: where.sandbox === "bwrap" && live ? jailView(where.slot) : null,
    listeners,
    files,
    artifact: where.artifact,
    artifactCode,
    before: { pid: where.slot.process?.pid, boots: where.slot.boots },
  };
}

/** Attempts one case; also asserts that no host listener was reached. */
async function perform(c: AttemptCase, env: CaseEnv): Promise<Seen> {
  const args = { id: c.id, port: listeners.httpPort, udpPort: listeners.udpPort, name: files.marker, ...c.args?.(env) };
  const hits = { ...listeners.hits };
  const seen = c.run ? await c.run(env, args) : await attempt(env.slot, args, c.deadlineMs ?? 5_000);
  await listeners.settle(); // whatever the attempt sent is counted before the sentinels
  expect(listeners.hits).toEqual(hits);
  return seen;
}

async function passes(fn: () => void | Promise<void>): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch {
    return false;
  }
}

/** Runs a case's judgement and records its verdict; a known escape must still reproduce exactly. */
async function judge(c: JailCase, body: () => Promise<{ seen: Seen | null; env: CaseEnv }>): Promise<void> {
  const { seen, env } = await body();
  if (c.kind === "attempt" && seen === null) throw new Error(`${c.id} was not attempted`);
  const secure = () => (c.kind === "host" ? c.inspect(env) : c.check(seen!, env));
  const live = c.finding !== undefined && (c.findingWhen?.() ?? true);
  if (!live) {
    await secure();
    verdicts.set(c.id, c.finding === undefined ? c.verdict : "refused");
    return;
  }
  if (await passes(secure)) {
    throw new Error(
      `${c.id}: finding ${c.finding} no longer reproduces (the secure check passes). Update tests/jail/cases.ts and docs/jail.md.`,
    );
  }
  if (c.evidence === undefined) throw new Error(`${c.id}: a finding needs evidence`);
  if (c.kind === "host") c.evidence(env);
  else c.evidence(seen!, env);
  verdicts.set(c.id, `escaped (${c.finding})`);
}

function title(c: JailCase): string {
  return `${c.id}: ${c.title}${c.finding ? ` — ESCAPES (${c.finding})` : ""}`;
}

function attemptTests(cases: readonly AttemptCase[], where: () => Where): void {
  for (const c of cases) {
    test(title(c), () =>
      judge(c, async () => {
        const env = envFor(where());
        return { seen: await perform(c, env), env };
      }),
    );
  }
}

function hostTests(cases: readonly HostCase[], where: () => Where): void {
  for (const c of cases) test(title(c), () => judge(c, async () => ({ seen: null, env: envFor(where()) })));
}

/** Runs `c` on a satellite with no OS sandbox and checks what the table says about its layer. */
async function control(c: AttemptCase, where: Where): Promise<void> {
  const env = envFor(where);
  const seen = await perform(c, env);
  if (c.layer === "deno") {
    // Deno alone refuses it, in the same words.
    await c.check(seen, env);
    return;
  }
  if (typeof c.control !== "function")
    throw new Error(`${c.id}: an '${c.layer}' case needs a control expectation or "skip"`);
  c.control(seen, env);
  // …and without the OS layer the jailed expectation does not hold: the OS layer is what refuses it.
  expect(await passes(() => c.check(seen, env))).toBe(false);
}

function controlTests(cases: readonly AttemptCase[], where: () => Where): void {
  for (const c of cases.filter((x) => x.control !== "skip")) {
    const what =
      c.layer === "deno" ? "Deno alone refuses it the same way" : "plain Deno does not refuse it: the OS layer does";
    test(`${c.id} with no OS sandbox: ${what}`, () => control(c, where()));
  }
}

beforeAll(async () => {
  files = hostFiles();
  listeners = new Listeners(files.dir);
  await listeners.start();
  bundled = await bundleToTemp(FIXTURE);
  artifactCode = readFileSync(bundled.artifact, "utf8");
});

afterAll(async () => {
  await Promise.all(slots.map((s) => s.destroy("the jail suite is over")));
  await listeners?.stop();
  bundled?.cleanup();
  for (const cleanup of cleanups) cleanup();
  files?.cleanup();
  const lines = CASES.map((c) => `${c.id.padEnd(26)} ${(verdicts.get(c.id) ?? "NO VERDICT").padEnd(14)} ${c.layer}`);
  console.log(`jail escape suite: ${verdicts.size}/${CASES.length} verdicts\n${lines.join("\n")}`);
});

async function ping(slot: SatelliteSlot): Promise<void> {
  expect(await attempt(slot, { id: "ping" })).toMatchObject({ answered: true, obs: { outcome: "succeeded" } });
}

describe("the table", () => {
  test("case ids are unique, well-formed and in order", () => {
    expect(new Set(CASE_IDS).size).toBe(CASE_IDS.length);
    for (const id of CASE_IDS) expect(id).toMatch(/^J\d{2,3}-[a-z0-9]+(?:-[a-z0-9]+)*$/);
    const numbers = CASE_IDS.map((id) => Number(/^J(\d+)/.exec(id)![1]));
    expect([...numbers].sort((a, b) => a - b)).toEqual(numbers);
  });

  test("every known escape carries evidence and the verdict 'escaped'", () => {
    for (const c of CASES) {
      if (c.finding === undefined) expect([c.id, c.verdict]).not.toEqual([c.id, "escaped"]);
      else expect([c.id, c.verdict, c.layer, c.evidence !== undefined]).toEqual([c.id, "escaped", "nothing", true]);
    }
  });

  test("docs/jail.md shows exactly this table", () => {
    const rows = CASES.map(docsRow);
    const docs = readFileSync(DOCS, "utf8");
    const begin = "<!-- cases:begin -->";
    const end = "<!-- cases:end -->";
    const from = docs.indexOf(begin);
    const to = docs.indexOf(end);
    expect(from).toBeGreaterThanOrEqual(0);
    expect(to).toBeGreaterThan(from);
    const header = "| id | attempt | what refuses it | layer | verdict |\n|---|---|---|---|---|";
    const wanted = `${begin}\n${header}\n${rows.join("\n")}\n${end}`;
    if (process.env.JAIL_WRITE_DOCS === "1") {
      writeFileSync(DOCS, docs.slice(0, from) + wanted + docs.slice(to + end.length));
      return;
    }
    // To regenerate after editing cases.ts: JAIL_WRITE_DOCS=1 make jail-test
    expect(docs.slice(from, to + end.length)).toBe(wanted);
    for (const id of CASE_IDS) expect(docs).toContain(`| ${id} |`);
  });
});

describe("the shared jailed satellite", () => {
  let slot: SatelliteSlot;
  const where = (): Where => ({ slot, artifact: bundled.artifact, sandbox: "bwrap" });

  beforeAll(async () => {
    slot = open(bundled);
    await ping(slot);
  });

  test("the fixture implements exactly the table's attempts", async () => {
    const listed = await attempt(slot, { id: "list" });
    const wanted = CASES.filter((c) => c.kind === "attempt").map((c) => c.id);
    expect(listed).toMatchObject({ answered: true, obs: { outcome: "succeeded" } });
    if (listed.answered && listed.obs.outcome === "succeeded")
      expect([...(listed.obs.detail as string[])].sort()).toEqual([...wanted].sort());
  });

  attemptTests(inGroup("shared", "attempt"), where);

  describe("what the host sees of that jail", () => {
    hostTests(inGroup("host", "host"), where);

    test("the shared satellite survived every attempt: one boot, one process", () => {
      expect(slot.boots).toBe(1);
      expect(slot.process?.state).toBe("ready");
    });
  });
});

describe("control: the shared attempts with no OS sandbox (which layer refuses)", () => {
  let slot: SatelliteSlot;
  beforeAll(async () => {
    slot = open(bundled, "none");
    await ping(slot);
  });
  controlTests(inGroup("shared", "attempt"), () => ({ slot, artifact: bundled.artifact, sandbox: "none" }));
});

describe("literal imports in the artifact itself (a bundler bypass)", () => {
  let tampered: Bundled;
  let jailed: SatelliteSlot;
  let plain: SatelliteSlot;

  beforeAll(async () => {
    // The bundler refuses a literal import() outside the extension, and Deno
    // checks permissions for computed ones. A literal one in the main module,
    // though, is part of Deno's module graph and loads with no permission
    // check: prepend some to a copy of the artifact.
    const dir = mkdtempSync(join(tmpdir(), "tether-art-literal-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const artifact = join(dir, "escape.js");
    const prefix = [
      "globalThis.__tetherLiteral = {",
      `  "J11-literal-text-passwd": () => import("file:///etc/passwd", { with: { type: "text" } }),`,
      `  "J12-literal-json": () => import(${JSON.stringify(`file://${files.json}`)}, { with: { type: "json" } }),`,
      `  "J13-literal-js": () => import(${JSON.stringify(`file://${files.js}`)}),`,
      `  "J14-literal-proc-cmdline": () => import("file:///proc/1/cmdline", { with: { type: "text" } }),`,
      "};",
      "",
    ].join("\n");
    writeFileSync(artifact, prefix + artifactCode);
    tampered = { ...bundled, artifact, cleanup: () => {} };
    jailed = open(tampered);
    plain = open(tampered, "none");
    await Promise.all([ping(jailed), ping(plain)]);
  });

  attemptTests(inGroup("literal", "attempt"), () => ({ slot: jailed, artifact: tampered.artifact, sandbox: "bwrap" }));
  controlTests(inGroup("literal", "attempt"), () => ({ slot: plain, artifact: tampered.artifact, sandbox: "none" }));
});

describe("the broker's socket path (its own satellite)", () => {
  let slot: SatelliteSlot;
  const where = (): Where => ({ slot, artifact: bundled.artifact, sandbox: "bwrap" });
  beforeAll(async () => {
    slot = open(bundled);
    await ping(slot);
  });
  hostTests(inGroup("socket", "host"), where);
  attemptTests(inGroup("socket", "attempt"), where);
});

describe("a poisoned parent environment (its own satellite)", () => {
  let slot: SatelliteSlot;
  beforeAll(async () => {
    const poison: Record<string, string> = {
      DENO_PERMISSION_BROKER_PATH: listeners.permissionBrokerPath,
      DENO_V8_FLAGS: "--allow-natives-syntax",
      HTTP_PROXY: `http://127.0.0.1:${listeners.httpPort}`,
      HTTPS_PROXY: `http://127.0.0.1:${listeners.httpPort}`,
      DENO_DIR: files.dir,
      TETHER_JAIL_SECRET: "must never reach a satellite",
    };
    const saved = Object.fromEntries(Object.keys(poison).map((k) => [k, process.env[k]]));
    Object.assign(process.env, poison);
    try {
      slot = open(bundled);
      await ping(slot); // boots now, from the poisoned environment
    } finally {
      for (const [k, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[k];
        else process.env[k] = value;
      }
    }
  });
  attemptTests(inGroup("env", "attempt"), () => ({ slot, artifact: bundled.artifact, sandbox: "bwrap" }));
});

describe("two satellites at once", () => {
  let slot: SatelliteSlot;
  let peer: SatelliteSlot;
  beforeAll(async () => {
    slot = open(bundled);
    peer = open(bundled);
    await Promise.all([ping(slot), ping(peer)]);
  });
  attemptTests(inGroup("peer", "attempt"), () => ({ slot, peer, artifact: bundled.artifact, sandbox: "bwrap" }));
});

describe("crashes, bombs and loops (its own satellite, replaced case after case)", () => {
  let slot: SatelliteSlot;
  beforeAll(async () => {
    slot = open(bundled);
    await ping(slot);
  });
  attemptTests(inGroup("crash", "attempt"), () => ({ slot, artifact: bundled.artifact, sandbox: "bwrap" }));
});

describe("the OS layer alone (the same jail around a Deno with --allow-all)", () => {
  // These cases spawn their own one-off jail; the slot is never booted (it only fills CaseEnv).
  let idle: SatelliteSlot;
  beforeAll(() => {
    idle = open(bundled);
  });
  hostTests(inGroup("bypass", "host"), () => ({ slot: idle, artifact: bundled.artifact, sandbox: "none" }));
});

test("every case has a verdict", () => {
  expect(CASE_IDS.filter((id) => !verdicts.has(id))).toEqual([]);
});
