/**
 * The boot handshake's checks: the served set a satellite's hello names must
 * be exactly what its manifest declares; and how a process's exit reads in a
 * message.
 */
import type { Hello } from "../../jail-runtime/wire/frames.js";
import { BrokerCode, TetherError } from "../base/errors.js";

/** What the approved manifest declares; the hello must match exactly. */
export interface Declared {
  readonly tools: readonly string[];
  readonly hooks: readonly string[];
  readonly commands?: readonly string[];
  readonly contexts?: readonly string[];
  readonly routes?: readonly string[];
  readonly compactions?: readonly string[];
  readonly providers?: readonly string[];
  readonly services?: readonly string[];
  /** Its `[[search]]` providers. */
  readonly searches?: readonly string[];
  /** The handlers its manifest calls for: `prepare` (`[managed]`), `observe` (`[observe]`), `init` (`[init]`). */
  readonly handles?: readonly ("prepare" | "observe" | "init")[];
  /** The kinds added beside the built-ins: per kind, the names of its `[[<kind>]]` rows. */
  readonly kinds?: Readonly<Record<string, readonly string[]>>;
  /** The manifest's `entry` (the module that exports them), for messages; default "the entry module". */
  readonly entry?: string;
}

/** What a hello says the artifact serves. */
export type Served = Pick<Hello, "tools" | "hooks" | "commands"> &
  Partial<
    Pick<Hello, "contexts" | "routes" | "compactions" | "providers" | "services" | "searches" | "handles" | "kinds">
  >;

/** A hello that does not serve what the manifest declares: `problems` says, one line each, what to change. */
export class ServedMismatch extends TetherError {
  constructor(
    message: string,
    readonly problems: readonly string[],
  ) {
    super(BrokerCode.servedMismatch, message);
  }
}

function list(names: readonly string[]): string {
  return `[${[...names].sort().join(", ")}]`;
}

const minus = (a: readonly string[], b: readonly string[]) => [...new Set(a)].filter((x) => !b.includes(x)).sort();

/** Per kind: the row that declares one, the export that serves it, and how to fix either side. */
const KINDS: Readonly<Record<string, { missing(n: string): string; extra(n: string): string }>> = {
  tool: {
    missing: () => `export it in \`tools\`, or remove its [[tool]] row`,
    extra: (n: string) => `add a [[tool]] row with name = "${n}", or remove it from \`tools\``,
  },
  hook: {
    missing: (n: string) => `add it to the exported \`hooks\` (${n}: hook("${n}", …)), or remove its [[hook]] row`,
    extra: (n: string) => `add a [[hook]] row with event = "${n}", or remove it from \`hooks\``,
  },
  command: {
    missing: () => `export it in \`commands\`, or remove its [[command]] row`,
    extra: (n: string) => `add a [[command]] row with name = "${n}", or remove it from \`commands\``,
  },
  context: {
    missing: () => `export it in \`contexts\`, or remove its [[context]] row`,
    extra: (n: string) => `add a [[context]] row with name = "${n}", or remove it from \`contexts\``,
  },
  route: {
    missing: () => `export it in \`routes\`, or remove its [[route]] row`,
    extra: (n: string) => `add a [[route]] row with name = "${n}", or remove it from \`routes\``,
  },
  compaction: {
    missing: () => `export it in \`compactions\`, or remove its [[compaction]] row`,
    extra: (n: string) => `add a [[compaction]] row with name = "${n}", or remove it from \`compactions\``,
  },
  provider: {
    missing: () => `export it in \`providers\`, or remove its [[provider]] row`,
    extra: (n: string) => `add a [[provider]] row with name = "${n}", or remove it from \`providers\``,
  },
  service: {
    missing: () => `export it in \`services\`, or remove its [[service]] row`,
    extra: (n: string) => `add a [[service]] row with name = "${n}", or remove it from \`services\``,
  },
  search: {
    missing: () => `export it in \`search\`, or remove its [[search]] row`,
    extra: (n: string) => `add a [[search]] row with name = "${n}", or remove it from \`search\``,
  },
  handler: {
    missing: (n: string) =>
      n === "prepare"
        ? "export `managed = { prepare, close }`, or remove the [managed] table"
        : n === "init"
          ? "export `init`, or remove [init]"
          : "export `observe`, or remove the [observe] table",
    extra: (n: string) =>
      n === "prepare"
        ? "add a [managed] table, or stop exporting `managed`"
        : n === "init"
          ? "add an [init] table, or stop exporting `init`"
          : "add an [observe] table with the events it is told about, or stop exporting `observe`",
  },
};

/** How to fix a difference in an added kind's names (`[[greet]]` rows against `kinds.greet`). */
const addedKind = (kind: string) => ({
  missing: () => `export it in \`kinds.${kind}\`, or remove its [[${kind}]] row`,
  extra: (n: string) => `add a [[${kind}]] row with name = "${n}", or remove it from \`kinds.${kind}\``,
});

/**
 * Each difference between what the manifest declares and what the module
 * serves, worded for the author: what is on which side, and the two ways to fix it.
 */
export function servedProblems(declared: Declared, served: Served): string[] {
  const entry = declared.entry ?? "the entry module";
  const sides: Array<[string, readonly string[], readonly string[]]> = [
    ["tool", declared.tools, served.tools],
    ["hook", declared.hooks, served.hooks],
    ["command", declared.commands ?? [], served.commands],
    ["context", declared.contexts ?? [], served.contexts ?? []],
    ["route", declared.routes ?? [], served.routes ?? []],
    ["compaction", declared.compactions ?? [], served.compactions ?? []],
    ["provider", declared.providers ?? [], served.providers ?? []],
    ["service", declared.services ?? [], served.services ?? []],
    ["search", declared.searches ?? [], served.searches ?? []],
    // `close` goes with `prepare` and may be left out: only what the manifest calls for is compared.
    ["handler", declared.handles ?? [], (served.handles ?? []).filter((h) => h !== "close")],
  ];
  // The added kinds, each compared as the built-in named rows are: a kind on either side is compared.
  const declaredKinds = declared.kinds ?? {};
  const servedKinds = served.kinds ?? {};
  const added = [...new Set([...Object.keys(declaredKinds), ...Object.keys(servedKinds)])].sort();
  for (const kind of added)
    sides.push([
      kind,
      (Object.hasOwn(declaredKinds, kind) ? declaredKinds[kind] : undefined) ?? [],
      (Object.hasOwn(servedKinds, kind) ? servedKinds[kind] : undefined) ?? [],
    ]);
  const problems: string[] = [];
  // The initializer is one export, not a named row: it reads as just `init`.
  const what = (kind: string, n: string) => (kind === "handler" && n === "init" ? "init" : `${kind} ${n}`);
  for (const [kind, want, have] of sides) {
    const fix = (added.includes(kind) ? undefined : KINDS[kind]) ?? addedKind(kind);
    for (const n of minus(want, have))
      problems.push(`declared in manifest.toml but not exported from ${entry}: ${what(kind, n)} (${fix.missing(n)})`);
    for (const n of minus(have, want))
      problems.push(`exported from ${entry} but not declared in manifest.toml: ${what(kind, n)} (${fix.extra(n)})`);
  }
  return problems;
}

/** Every kind but tools, hooks and commands, none served: what the two sides are compared without. */
const noOtherKinds = () => ({
  contexts: [],
  routes: [],
  compactions: [],
  providers: [],
  services: [],
  handles: [],
  kinds: {},
  searches: [],
});

/** Throws ServedMismatch (`served_mismatch`) unless the hello serves exactly the declared tools, hooks and commands. */
export function checkServed(name: string, declared: Declared, hello: Served): void {
  const problems = servedProblems(declared, hello);
  // A name served twice is a mismatch too, though no side lacks it.
  const twice = (a: readonly string[]) => new Set(a).size !== a.length;
  if (problems.length === 0 && !twice(hello.tools) && !twice(hello.hooks) && !twice(hello.commands)) return;
  if (
    problems.length > 0 &&
    servedProblems({ ...declared, ...noOtherKinds() }, { ...hello, ...noOtherKinds() }).length === 0
  ) {
    // Only the session-facing (or added) kinds differ: say just that.
    throw new ServedMismatch(
      `Extension '${name}' is broken: ${problems.join("; ")}. Its author must fix the extension (tether check ` +
        `<folder> lists what to change), then install it again`,
      problems,
    );
  }
  const { tools, hooks } = declared;
  const commands = declared.commands ?? [];
  const cmds = (names: readonly string[]) =>
    names.length > 0 || commands.length > 0 ? ` and commands ${list(names)}` : "";
  throw new ServedMismatch(
    `Extension '${name}' is broken: the manifest declares tools ${list(tools)} and ` +
      `hooks ${list(hooks)}${cmds(commands)}, ` +
      `but the artifact serves tools ${list(hello.tools)} and hooks ${list(hello.hooks)}${cmds(hello.commands)}` +
      `${problems.length > 0 ? `: ${problems.join("; ")}` : ""}. Its author must fix the extension (tether ` +
      `check <folder> lists what to change), then install it again`,
    problems,
  );
}

/** A process's exit as a message fragment ("exited with code 1"). */
export function describeExit(code: number | null, signal: string | null, memoryMb: number): string {
  // V8 aborts with SIGTRAP (exit 133) when --max-old-space-size is exceeded.
  if (code === 133 || signal === "SIGTRAP") return `ran out of memory (limit ${memoryMb} MiB) and exited`;
  return signal ? `exited with signal ${signal}` : `exited with code ${code}`;
}
