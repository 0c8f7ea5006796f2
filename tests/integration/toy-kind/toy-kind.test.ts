/**
 * The newcomer's path: a toy invocation kind, `greet`, added with nothing but
 * this folder — its wire half (./wire.ts: payload and answer schemas), its
 * broker half (./broker.ts: the `[[greet]]` section and the kernel's row), its
 * SDK half (./sdk.ts: the handlers' type) — and the one table it is
 * registered in (`Broker.open({ kinds: [greetKind] })`). Over a real jailed
 * Deno satellite: the section is read, reviewed and granted; the kind is
 * invoked through the kernel and its answer checked; the ledger has its row;
 * an unknown name and a payload its schema refuses are refused; a malformed
 * answer is `crashed`; a hello whose served set is not the manifest's fails
 * the boot; a broker without the kind refuses the section as any unknown one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger } from "../../../broker/base/log.js";
import { Broker } from "../../../broker/broker.js";
import { builtinKinds, kindTable } from "../../../broker/kernel/kinds.js";
import { reviewOutput } from "../../../broker/operator/review.js";
import { ToolArgsChecker } from "../../../broker/base/tool-args.js";
import { envOptions } from "../../support/env-options.js";
import { greetKind } from "./broker.js";
import { Greet } from "./wire.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const SESSION = "toy-session";

let tmp: string;
let broker: Broker;

/** This session's greet rows in the ledger: [extension, name, outcome]. */
function ledger(): [string, string, string][] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select extension, name, outcome from invocations where session_id = ? and kind = 'greet' order by id")
    .all(SESSION) as { extension: string; name: string; outcome: string }[];
  return rows.map((r) => [r.extension, r.name, r.outcome]);
}

const greet = (extension: string, name: string, payload: unknown) =>
  broker.invoke(extension, "greet", name, JSON.stringify(payload), { session: SESSION });

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-toy-kind-"));
  broker = Broker.open({
    ...envOptions(),
    home: join(tmp, "home"),
    log: createLogger({ level: "error" }),
    kinds: [greetKind],
  });
  for (const name of ["greeter", "liar"]) {
    await broker.registry.install(join(HERE, name));
    broker.registry.approve(name);
  }
}, 120_000);

afterAll(async () => {
  await broker?.close();
  rmSync(tmp, { recursive: true, force: true });
});

test("the [[greet]] section is read by its own schema, granted and shown at review", () => {
  const installed = broker.registry.require("greeter");
  expect(installed.manifest.kinds?.greet?.rows.map((r) => r.name)).toEqual(["hello", "mumble"]);
  expect(broker.registry.latestApproval("greeter")?.grants.kinds).toEqual({ greet: ["hello", "mumble"] });
  const { text } = reviewOutput(broker, "greeter", false);
  expect(text).toContain("It serves greet: hello — Says hello to whoever it is handed. (sees the name it greets)");
  expect(text).toContain("It serves greet: mumble");
});

test("invoked through the kernel, the answer is checked against the kind's schema and recorded", async () => {
  const { outcome, invocationId } = await greet("greeter", "hello", { who: "Ada" });
  expect(outcome).toEqual({ ok: true, value: '{"text":"Hello, Ada"}' });
  expect(invocationId).not.toBeNull();
  expect(ledger()).toEqual([["greeter", "hello", "ok"]]);
}, 60_000);

test("an unknown name is refused naming what it has; a payload its schema refuses is bad_arguments", async () => {
  const unknown = await greet("greeter", "wave", { who: "Ada" });
  expect(unknown.outcome).toEqual({
    ok: false,
    error: { code: "unknown_tool", msg: "'greeter' has no approved greet 'wave'; it has [hello, mumble]" },
  });
  expect(unknown.invocationId).toBeNull();
  const bad = await greet("greeter", "hello", { who: 7 });
  expect(bad.outcome.ok).toBe(false);
  if (!bad.outcome.ok) {
    expect(bad.outcome.error.code).toBe("bad_arguments");
    expect(bad.outcome.error.msg).toMatch(/^greet 'hello': .*at \.who/);
  }
  expect(ledger().slice(1)).toEqual([["greeter", "hello", "bad_arguments"]]);
}, 60_000);

test("a malformed answer is crashed, and the ledger says so", async () => {
  const { outcome } = await greet("greeter", "mumble", { who: "Ada" });
  expect(outcome.ok).toBe(false);
  if (!outcome.ok) {
    expect(outcome.error.code).toBe("crashed");
    expect(outcome.error.msg).toMatch(/^greet 'mumble' answered what it may not: .*at \.text/);
  }
  expect(ledger().at(-1)).toEqual(["greeter", "mumble", "crashed"]);
}, 60_000);

test("a hello that serves a greeter its manifest does not declare fails the boot, naming the fix", async () => {
  await expect(broker.activate(SESSION, "liar")).rejects.toThrow(
    'exported from index.ts but not declared in manifest.toml: greet shout (add a [[greet]] row with name = "shout", or remove it from `kinds.greet`)',
  );
}, 60_000);

test("without the kind registered, [[greet]] is refused as any unknown section", async () => {
  const other = Broker.open({ ...envOptions(), home: join(tmp, "plain"), log: createLogger({ level: "error" }) });
  try {
    await expect(other.registry.install(join(HERE, "greeter"))).rejects.toThrow(/greet: /);
  } finally {
    await other.close();
  }
});

test("a kind may not take a built-in kind's name or a built-in section's", () => {
  const builtin = builtinKinds(new ToolArgsChecker());
  expect(() => kindTable(builtin, [{ ...greetKind, definition: { ...Greet, name: "tool" } }])).toThrow(
    "Cannot add the kind 'tool'",
  );
  expect(() => kindTable(builtin, [{ ...greetKind, definition: { ...Greet, name: "secret" } }])).toThrow(
    "the manifest has a [secret] of its own",
  );
  expect(() => kindTable(builtin, [greetKind, greetKind])).toThrow("it is added twice");
});
