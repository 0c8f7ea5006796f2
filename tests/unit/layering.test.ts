/**
 * Import boundaries, re-checked from the source: `jail-runtime/` never imports
 * `broker/`; the shared wire imports nothing runtime-specific; the broker reaches
 * into `jail-runtime/` only for the wire; the contracts every layer shares live
 * in `broker/base/`, which imports no other broker folder, and the satellite,
 * the capabilities and the sessions meet there rather than in one another's
 * files; only `broker/store/` (and `broker/registry/`) touches SQLite, drizzle
 * and the schema; and the environment is read at the edge only: `broker/cli/`.
 * Then the whole import graph: no circles, and a layer order (`LAYERS`, the
 * source of truth docs/architecture.md reads) that no import climbs.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import {
  circles,
  graphOf,
  layerViolations,
  place,
  type Graph,
  type Layer,
  type LayerRules,
  type Violation,
} from "./support/import-graph.js";
import { REPO, sourcesUnder } from "./support/repo-files.js";

const parsed = new Map<string, ts.SourceFile>();

/** Parses a repo file (cached), or `text` under the name `file`. */
function parse(file: string, text?: string): ts.SourceFile {
  if (text !== undefined) return ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  let source = parsed.get(file);
  if (source === undefined) {
    source = ts.createSourceFile(
      file,
      readFileSync(join(REPO, file), "utf8"),
      ts.ScriptTarget.ES2022,
      true,
      ts.ScriptKind.TS,
    );
    parsed.set(file, source);
  }
  return source;
}

/**
 * Every module specifier a file names: static imports, re-exports (`export * as`
 * included), `import x = require()`, dynamic `import()`, `require()` and
 * `import("x").T` types. Strings that merely look like imports are not counted.
 */
function specifiers(source: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      out.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expr = node.moduleReference.expression;
      if (ts.isStringLiteral(expr)) out.push(expr.text);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === "require";
      const [first] = node.arguments;
      if ((isImport || isRequire) && first !== undefined && ts.isStringLiteralLike(first)) out.push(first.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      out.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * Where a relative specifier points, repo-relative with a .ts extension (a folder's
 * `index.ts` when the folder is named); null for packages and `node:`.
 */
function target(file: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  const named = resolve(REPO, dirname(file), specifier).replace(/\.js$/, ".ts");
  const index = join(named.replace(/\.ts$/, ""), "index.ts");
  const isFile = existsSync(named) && statSync(named).isFile();
  const abs = !isFile && existsSync(index) ? index : named;
  return relative(REPO, abs).split(sep).join("/");
}

/** Identifiers naming one of `globals` as a value, not as a property name or a declaration. */
function globalReferences(source: ts.SourceFile, globals: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && globals.has(node.text)) {
      const parent = node.parent;
      const isMemberName =
        (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        ((ts.isPropertyAssignment(parent) ||
          ts.isPropertyDeclaration(parent) ||
          ts.isPropertySignature(parent) ||
          ts.isMethodDeclaration(parent)) &&
          parent.name === node);
      if (!isMemberName)
        out.push(`${node.text} (line ${source.getLineAndCharacterOfPosition(node.getStart()).line + 1})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Reads of the store's raw handles (`x.sqlite`, `x.orm`, `x["orm"]`, `const { sqlite } = x`), not declarations of them. */
function storeHandleReferences(source: ts.SourceFile): string[] {
  const HANDLES = new Set(["sqlite", "orm"]);
  const out: string[] = [];
  const at = (node: ts.Node, name: string): string =>
    `.${name} (line ${source.getLineAndCharacterOfPosition(node.getStart()).line + 1})`;
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && HANDLES.has(node.name.text)) out.push(at(node.name, node.name.text));
    else if (
      ts.isElementAccessExpression(node) &&
      ts.isStringLiteralLike(node.argumentExpression) &&
      HANDLES.has(node.argumentExpression.text)
    ) {
      out.push(at(node.argumentExpression, node.argumentExpression.text));
    } else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
      const key = node.propertyName ?? node.name;
      if ((ts.isIdentifier(key) || ts.isStringLiteral(key)) && HANDLES.has(key.text)) out.push(at(key, key.text));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * Each read of `process.env` (`process.env`, `process["env"]`, `globalThis.process.env`,
 * `const { env } = process`), as "line N".
 */
function envReads(source: ts.SourceFile): string[] {
  const out: string[] = [];
  const line = (node: ts.Node): string => `line ${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const isProcess = (expr: ts.Expression): boolean =>
    (ts.isIdentifier(expr) && expr.text === "process") ||
    (ts.isPropertyAccessExpression(expr) &&
      expr.name.text === "process" &&
      ts.isIdentifier(expr.expression) &&
      expr.expression.text === "globalThis");
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && node.name.text === "env" && isProcess(node.expression))
      out.push(line(node));
    else if (
      ts.isElementAccessExpression(node) &&
      ts.isStringLiteralLike(node.argumentExpression) &&
      node.argumentExpression.text === "env" &&
      isProcess(node.expression)
    )
      out.push(line(node));
    else if (
      ts.isVariableDeclaration(node) &&
      node.initializer !== undefined &&
      isProcess(node.initializer) &&
      ts.isObjectBindingPattern(node.name)
    ) {
      if (node.name.elements.some((e) => ((e.propertyName ?? e.name) as ts.Identifier).text === "env"))
        out.push(line(node));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

interface Edge {
  readonly from: string;
  readonly specifier: string;
  readonly to: string | null;
}

function edges(files: readonly string[]): Edge[] {
  return files.flatMap((from) =>
    specifiers(parse(from)).map((specifier) => ({ from, specifier, to: target(from, specifier) })),
  );
}

/**
 * The test kit (`@tether/ext/testing`) runs in an author's `deno test`, never in the jail. It judges
 * fake fetches with the broker's own egress matcher (one matcher, so the two cannot disagree): the
 * one place satellite-side code imports broker code, and the packages that matcher needs.
 */
const TEST_KIT = "jail-runtime/ext/testing/";
const KIT_PACKAGES: readonly string[] = ["smol-toml", "tldts"];
const kitUsesTheMatcher = (e: Edge) => e.from.startsWith(TEST_KIT) && (e.to?.startsWith("broker/egress/") ?? false);

const RUNTIME_GLOBALS = new Set(["Deno", "process", "Buffer", "require", "__dirname", "__filename", "Bun"]);

describe("the import scanner", () => {
  test("specifiers() finds every import form and ignores strings that only look like imports", () => {
    const source = parse(
      "x.ts",
      [
        'import a from "./a.js";',
        'import type { B } from "./b.js";',
        'export { c } from "./c.js";',
        'export * as d from "./d.js";',
        'import e = require("./e.js");',
        'const f = await import("./f.js");',
        'const g = require("./g.js");',
        'type H = import("./h.js").H;',
        'import "./i.js";',
        'export type { J } from "./j.js";',
        'const fake = `import x from "../broker/errors.js"`;',
        '// import y from "../broker/log.js";',
      ].join("\n"),
    );
    expect(specifiers(source)).toEqual([
      "./a.js",
      "./b.js",
      "./c.js",
      "./d.js",
      "./e.js",
      "./f.js",
      "./g.js",
      "./h.js",
      "./i.js",
      "./j.js",
    ]);
  });

  test("globalReferences() finds a runtime global used as a value but not as a property name or in a comment", () => {
    const source = parse(
      "x.ts",
      "// Deno is mentioned\nconst o = { Deno: 1 };\no.Deno;\nconst n = Deno.args;\nprocess.exit(1);",
    );
    expect(globalReferences(source, RUNTIME_GLOBALS)).toEqual(["Deno (line 4)", "process (line 5)"]);
  });

  test("storeHandleReferences() finds reads of .sqlite and .orm but not declarations, other names or comments", () => {
    const source = parse(
      "x.ts",
      [
        "// store.sqlite.prepare in a comment",
        "interface S { readonly orm: unknown; sqlite: unknown }",
        "const s = { orm: 1, sqlite: 2 };",
        'store.sqlite.prepare("select 1");',
        "broker.store.orm.select();",
        'store["sqlite"].pragma("x");',
        "const { orm } = store;",
        "const { sqlite: db } = store;",
        "store.sqliteish; store.path;",
      ].join("\n"),
    );
    expect(storeHandleReferences(source)).toEqual([
      ".sqlite (line 4)",
      ".orm (line 5)",
      ".sqlite (line 6)",
      ".orm (line 7)",
      ".sqlite (line 8)",
    ]);
  });

  test("envReads() finds every way of reading process.env but not a mention, another object's env, or a parameter named env", () => {
    const source = parse(
      "x.ts",
      [
        "const a = process.env.HOME;",
        'const b = process["env"];',
        "const c = globalThis.process.env;",
        "const { env } = process;",
        "// process.env in a comment",
        'const s = "process.env";',
        "const o = { env: 1 }; o.env;",
        "function f(env: Record<string, string>) { return env.X; }",
        "const { argv } = process;",
      ].join("\n"),
    );
    expect(envReads(source)).toEqual(["line 1", "line 2", "line 3", "line 4"]);
  });
});

describe("layering", () => {
  const jailFiles = sourcesUnder("jail-runtime");
  const brokerFiles = sourcesUnder("broker");
  const wireFiles = sourcesUnder("jail-runtime/wire");

  test("the trees being checked are not empty", () => {
    expect(jailFiles).toEqual(
      expect.arrayContaining([
        "jail-runtime/ext/answer.ts",
        "jail-runtime/cap/runtime.ts",
        "jail-runtime/wire/codec.ts",
      ]),
    );
    expect(brokerFiles).toEqual(expect.arrayContaining(["broker/base/errors.ts", "broker/satellite/connection.ts"]));
    expect(wireFiles).toEqual([
      "jail-runtime/wire/act-args.ts",
      "jail-runtime/wire/act-within.ts",
      "jail-runtime/wire/codec.ts",
      "jail-runtime/wire/codes.ts",
      "jail-runtime/wire/document-bounds.ts",
      "jail-runtime/wire/events.ts",
      "jail-runtime/wire/frame-check.ts",
      "jail-runtime/wire/frames.ts",
      "jail-runtime/wire/held-bytes.ts",
      "jail-runtime/wire/kinds.ts",
      "jail-runtime/wire/kv-args.ts",
      "jail-runtime/wire/kv-cas.ts",
      "jail-runtime/wire/media-blocks.ts",
      "jail-runtime/wire/model-args.ts",
      "jail-runtime/wire/provider-kinds.ts",
      "jail-runtime/wire/rate.ts",
      "jail-runtime/wire/search-kinds.ts",
      "jail-runtime/wire/service-kinds.ts",
      "jail-runtime/wire/session-kinds.ts",
      "jail-runtime/wire/sql-allowlist.ts",
      "jail-runtime/wire/version.ts",
    ]);
  });

  test("nothing under jail-runtime/ imports from broker/ (but the test kit, from broker/egress/ only)", () => {
    const offending = edges(jailFiles).filter(
      (e) => (e.to?.startsWith("broker/") || /(^|\/)broker(\/|$)/.test(e.specifier)) && !kitUsesTheMatcher(e),
    );
    expect(offending).toEqual([]);
  });

  test("jail-runtime/ imports only its own files, valibot and msgpackr (the test kit also the matcher's)", () => {
    const outside = edges(jailFiles).filter((e) =>
      e.to === null
        ? !["valibot", "msgpackr"].includes(e.specifier) &&
          !(e.from.startsWith(TEST_KIT) && KIT_PACKAGES.includes(e.specifier))
        : !e.to.startsWith("jail-runtime/") && !kitUsesTheMatcher(e),
    );
    expect(outside).toEqual([]);
  });

  test("no satellite code reaches the test kit, so none reaches the broker's code through it", () => {
    const intoKit = edges(jailFiles).filter((e) => e.to?.startsWith(TEST_KIT) && !e.from.startsWith(TEST_KIT));
    expect(intoKit).toEqual([]);
  });

  test("jail-runtime/wire/ imports only valibot, msgpackr and other wire files", () => {
    const offending = edges(wireFiles).filter((e) =>
      e.to === null ? !["valibot", "msgpackr"].includes(e.specifier) : !e.to.startsWith("jail-runtime/wire/"),
    );
    expect(offending).toEqual([]);
  });

  // The satellite frames with its own msgpack code: msgpackr in an artifact would load Deno's Node layer at
  // every boot (its `typeof Buffer`), and be parsed there for nothing.
  test("the satellite's runtime (cap/, ext/), followed transitively, reaches no msgpackr", () => {
    const runtime = jailFiles.filter((f) => /^jail-runtime\/(cap|ext)\//.test(f) && !f.startsWith(TEST_KIT));
    const seen = new Set<string>();
    const queue = [...runtime];
    const packages = new Set<string>();
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const e of edges([file])) {
        if (e.to === null) packages.add(`${e.specifier} (from ${file})`);
        else if (!e.to.startsWith(TEST_KIT)) queue.push(e.to);
      }
    }
    expect(seen.has("jail-runtime/wire/frame-check.ts")).toBe(true);
    expect([...packages].filter((p) => p.startsWith("msgpackr"))).toEqual([]);
  });

  test("jail-runtime/wire/ uses no runtime's globals (no Deno, process, Buffer, require)", () => {
    const uses = wireFiles.flatMap((file) =>
      globalReferences(parse(file), RUNTIME_GLOBALS).map((ref) => `${file}: ${ref}`),
    );
    expect(uses).toEqual([]);
  });

  // The broker and the jail share the wire and nothing else (the event list, too,
  // is the wire's: `EVENT_NAMES` in wire/events.ts).
  test("broker/ imports jail-runtime/ only for the wire", () => {
    const intoJail = edges(brokerFiles).filter((e) => e.to?.startsWith("jail-runtime/"));
    expect(
      intoJail.filter((e) => !e.to!.startsWith("jail-runtime/wire/")).map((e) => `${e.from} imports ${e.specifier}`),
    ).toEqual([]);
    // The rule is not vacuous: the broker does use the wire.
    const used = new Set(intoJail.map((e) => e.to));
    expect([...used].sort()).toEqual(
      expect.arrayContaining([
        "jail-runtime/wire/codec.ts",
        "jail-runtime/wire/codes.ts",
        "jail-runtime/wire/events.ts",
        "jail-runtime/wire/frames.ts",
      ]),
    );
  });

  const folderOf = (file: string): string => file.split("/").slice(0, 2).join("/");

  test("broker/base/ imports nothing from other broker/ folders: only itself, the wire and packages", () => {
    const baseFiles = brokerFiles.filter((f) => f.startsWith("broker/base/"));
    expect(baseFiles).toEqual(
      expect.arrayContaining(["broker/base/capability.ts", "broker/base/errors.ts", "broker/base/outcome.ts"]),
    );
    const offending = edges(baseFiles)
      .filter((e) => e.to !== null && !e.to.startsWith("broker/base/") && !e.to.startsWith("jail-runtime/wire/"))
      .map((e) => `${e.from} imports ${e.specifier}`);
    expect(offending).toEqual([]);
  });

  /**
   * Between the satellite, the capabilities and the sessions, the imports that
   * may cross, each with why. Every contract they share (calls, replies,
   * outcomes, invocation options) is in broker/base/; none of them reads
   * another's implementation for a type.
   */
  const MAY_CROSS: Readonly<Record<string, string>> = {
    // A session's policy is the capabilities' own setting (it narrows what net.fetch
    // may reach); sessions store and hand it over, they define nothing of it.
    "broker/sessions/session.ts -> broker/caps/policy.ts": "a session's policy, as the capabilities define it",
    "broker/sessions/session-records.ts -> broker/caps/policy.ts":
      "a stored session's policy, as the capabilities define it",
    // The cap_call event's payload is built where the capability is judged; the
    // session's hook bus only forwards it to the hooks.
    "broker/sessions/bus.ts -> broker/caps/context.ts": "the cap_call event the capabilities raise",
  };
  const PEERS = new Set(["broker/satellite", "broker/caps", "broker/sessions"]);

  test("broker/satellite/, broker/caps/ and broker/sessions/ meet in broker/base/, not in one another's files", () => {
    const crossing = edges(brokerFiles.filter((f) => PEERS.has(folderOf(f))))
      .filter((e) => e.to !== null && PEERS.has(folderOf(e.to)) && folderOf(e.to) !== folderOf(e.from))
      .map((e) => `${e.from} -> ${e.to}`);
    expect(crossing.filter((c) => MAY_CROSS[c] === undefined)).toEqual([]);
    // The allow-list matches reality: each entry still crosses.
    expect(Object.keys(MAY_CROSS).filter((c) => !crossing.includes(c))).toEqual([]);
    // And nothing at all reaches into the satellite's implementation from caps/ or sessions/.
    expect(crossing.filter((c) => c.includes("-> broker/satellite/"))).toEqual([]);
  });

  /**
   * Files under broker/ (outside broker/cli/) that may read process.env, each with why.
   * Everything else is told what it needs through options (BrokerOptions and below).
   */
  const MAY_READ_ENV: Readonly<Record<string, string>> = {
    // The operator's command hooks are the operator's own scripts, run on the host like a
    // shell alias: they are handed a few of the broker process's own variables (PATH, HOME,
    // LANG, ...), as a shell would pass them. That is the hooks' environment, not the
    // broker's configuration: nothing there changes what the broker does.
    "broker/hooks/builtin-hooks.ts": "passes PATH, HOME, LANG and a few more on to the operator's command hooks",
    // `ldd` inherits the broker's environment, and the loader's variables change what it finds: the
    // kept library list is keyed by them. What the broker does is not configured by them.
    "broker/jail/libraries.ts": "keys the kept library list by LD_LIBRARY_PATH and LD_PRELOAD, which ldd inherits",
  };

  test("no file under broker/ but broker/cli/ reads process.env (the environment is read once, at the edge)", () => {
    const reads = brokerFiles
      .filter((file) => !file.startsWith("broker/cli/"))
      .flatMap((file) => envReads(parse(file)).map((where) => ({ file, where })));
    const offending = reads
      .filter((r) => MAY_READ_ENV[r.file] === undefined)
      .map((r) => `${r.file}: process.env read at ${r.where}`);
    expect(offending).toEqual([]);
    // The allow-list matches reality: each entry still reads it.
    const readers = new Set(reads.map((r) => r.file));
    expect(Object.keys(MAY_READ_ENV).filter((file) => !readers.has(file))).toEqual([]);
    // And the edge does read it (the rule would pass vacuously if the scanner found nothing).
    expect(envReads(parse("broker/cli/environment.ts")).length).toBeGreaterThan(0);
  });

  test("everything the broker loads from jail-runtime/, followed transitively, is the wire and uses no Deno", () => {
    const seen = new Set<string>();
    const queue = edges(brokerFiles).flatMap((e) => (e.to?.startsWith("jail-runtime/") ? [e.to] : []));
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const e of edges([file])) if (e.to !== null) queue.push(e.to);
    }
    expect(seen.has("jail-runtime/wire/events.ts")).toBe(true);
    expect([...seen].filter((f) => !f.startsWith("jail-runtime/wire/"))).toEqual([]);
    const denoUses = [...seen].flatMap((file) =>
      globalReferences(parse(file), new Set(["Deno"])).map((ref) => `${file}: ${ref}`),
    );
    expect(denoUses).toEqual([]);
  });

  // Storage sits behind store/: repositories, the ledger and the audit queries
  // are the only code that knows the tables. registry/ keeps its own queries on
  // installs and approvals. Tests (under tests/) may read the tables directly.
  const MAY_TOUCH_STORAGE = (file: string): boolean =>
    file.startsWith("broker/store/") || file.startsWith("broker/registry/");
  const STORAGE_PACKAGES = ["drizzle-orm", "drizzle-kit", "better-sqlite3"];
  const isStoragePackage = (specifier: string): boolean =>
    STORAGE_PACKAGES.some((p) => specifier === p || specifier.startsWith(`${p}/`));

  test("only broker/store/ and broker/registry/ import drizzle, better-sqlite3 or the schema", () => {
    const offending = edges(brokerFiles.filter((f) => !MAY_TOUCH_STORAGE(f)))
      .filter((e) => (e.to === null ? isStoragePackage(e.specifier) : e.to === "broker/store/schema.ts"))
      .map((e) => `${e.from} imports ${e.specifier}`);
    expect(offending).toEqual([]);
  });

  test("only broker/store/ and broker/registry/ use the store's raw handles (.sqlite, .orm)", () => {
    const uses = brokerFiles
      .filter((f) => !MAY_TOUCH_STORAGE(f))
      .flatMap((file) => storeHandleReferences(parse(file)).map((ref) => `${file} uses ${ref}`));
    expect(uses).toEqual([]);
  });

  test("only broker/store/ knows a dialect: PostgreSQL's packages and schema only under broker/store/pg/, SQLite's only under broker/store/", () => {
    const PG = /^(pg|pg-[\w-]+|drizzle-orm\/(pg-core|node-postgres)(\/.*)?)$/;
    const SQLITE = /^(better-sqlite3|drizzle-orm\/(sqlite-core|better-sqlite3)(\/.*)?)$/;
    const all = edges(brokerFiles);
    const offending = [
      ...all
        .filter(
          (e) =>
            !e.from.startsWith("broker/store/pg/") && (PG.test(e.specifier) || e.to === "broker/store/pg/schema.ts"),
        )
        .map((e) => `${e.from} imports ${e.specifier}`),
      ...all
        .filter((e) => !e.from.startsWith("broker/store/") && SQLITE.test(e.specifier))
        .map((e) => `${e.from} imports ${e.specifier}`),
    ];
    expect(offending).toEqual([]);
    // The rule sees what it is about.
    expect(all.some((e) => e.from.startsWith("broker/store/pg/") && e.specifier === "pg")).toBe(true);
    expect(all.some((e) => e.from.startsWith("broker/store/") && e.specifier === "better-sqlite3")).toBe(true);
  });

  test("the storage rule matches reality: store/ itself uses what the rest may not", () => {
    const inStore = edges(brokerFiles.filter((f) => f.startsWith("broker/store/")));
    expect(inStore.some((e) => e.specifier === "drizzle-orm")).toBe(true);
    expect(inStore.some((e) => e.specifier === "better-sqlite3")).toBe(true);
    expect(inStore.some((e) => e.to === "broker/store/schema.ts")).toBe(true);
    expect(storeHandleReferences(parse("broker/store/kv-repository.ts")).length).toBeGreaterThan(0);
  });
});

// ── the import graph: no circles, and a layer order ──────────────────────

/**
 * The layers, bottom to top: a file may import its own layer and the layers
 * below, never one above. This list is the source of truth (docs/architecture.md
 * describes it). A folder ends in `/`; a file is named; every scanned file must
 * be in one (a new folder is placed here when it is made).
 */
const LAYERS: readonly Layer[] = [
  // The frames broker and satellite speak: only itself (the rules above).
  { name: "wire", members: ["jail-runtime/wire/"] },
  // The satellite's own program (Deno, in the jail): the capability prelude and the author SDK.
  { name: "satellite runtime", stack: "satellite", members: ["jail-runtime/cap/", "jail-runtime/ext/"] },
  // The contracts every broker layer shares.
  { name: "base", stack: "broker", members: ["broker/base/"] },
  // What the broker is built from: storage, the jail, satellites, capabilities, installs, hooks.
  {
    name: "infrastructure",
    stack: "broker",
    members: [
      "broker/store/",
      "broker/registry/",
      "broker/jail/",
      "broker/satellite/",
      "broker/egress/",
      "broker/secrets/",
      "broker/install/",
      "broker/caps/",
      "broker/hooks/",
      "broker/fleet-trust/",
      // Lays out the author SDK's packages from jail-runtime/ (tether new, packages/pack.ts).
      "broker/sdk/",
      "broker/satellite-launcher.ts",
    ],
  },
  // What the features register with; broker-options.ts holds its ports (fleet.ts implements SessionFleet).
  { name: "kernel", stack: "broker", members: ["broker/kernel/", "broker/broker-options.ts"] },
  {
    name: "features",
    stack: "broker",
    members: [
      "broker/init/",
      "broker/login/",
      "broker/providers/",
      "broker/services/",
      "broker/sessions/",
      "broker/fleet.ts",
    ],
  },
  // The Broker, which puts the features together, and the library's entry.
  { name: "composition root", stack: "broker", members: ["broker/broker.ts", "broker/index.ts"] },
  // The operator's actions (approve, review, uninstall, audit...), shared by every delivery.
  { name: "operator", stack: "broker", members: ["broker/operator/"] },
  // How the outside talks to a broker: the JSON-RPC API, the console's pages, MCP. Each on its own.
  { name: "delivery", stack: "broker", apart: true, members: ["broker/serve/", "broker/console/", "broker/mcp/"] },
  // What the programs share: `tether serve` (the API server with the console and the extension
  // pages mounted on it) and the TETHER_* environment, read once at the edge.
  { name: "assembly", stack: "broker", members: ["broker/tether-serve/", "broker/cli/environment.ts"] },
  // The programs that start one: the tether command (`tether serve`, `tether mcp`), make demo, the SDK's packer.
  { name: "programs", stack: "broker", apart: true, members: ["broker/cli/", "broker/demo/", "packages/"] },
];

const RULES: LayerRules = {
  layers: LAYERS,
  broker: { file: "broker/broker.ts", importers: ["composition root", "delivery", "assembly", "programs"] },
};

/**
 * A circle allowed by name (empty since the kernel landed: the check is
 * strict). A component that holds any other file fails; when the component
 * shrinks the test says so, and the files that left go from here.
 */
const KNOWN_BROKER_CIRCLE: ReadonlySet<string> = new Set([]);

/**
 * Edges that break the order today, by rule, as `from -> to`. Each list only
 * shrinks: an entry that no longer breaks its rule fails the test until it is
 * taken out.
 */
const KNOWN_VIOLATIONS: Readonly<Record<Exclude<Violation["rule"], "unplaced">, readonly string[]>> = {
  "imports the Broker": [],
  // The test kit judges fake fetches with the broker's own egress matcher (TEST_KIT above): by design.
  "crosses stacks": [
    "jail-runtime/ext/testing/egress.ts -> broker/egress/ip-literal.ts",
    "jail-runtime/ext/testing/egress.ts -> broker/egress/manifest-layer.ts",
    "jail-runtime/ext/testing/egress.ts -> broker/egress/rules.ts",
  ],
  upward: [],
  sideways: [],
};

/** The import graph of `files`: each file → the files among them it imports, of every import form. */
function importGraph(files: readonly string[]): Graph {
  const within = new Set(files);
  const graph = new Map<string, Set<string>>(files.map((f) => [f, new Set<string>()]));
  for (const e of edges(files)) if (e.to !== null && within.has(e.to)) graph.get(e.from)!.add(e.to);
  return graph;
}

/** The circles that are not the known Broker circle, and what the known circle has become. */
function unknownCircles(
  graph: Graph,
  known: ReadonlySet<string>,
): { unknown: string[]; remaining: ReadonlySet<string> } {
  const unknown: string[] = [];
  const remaining = new Set<string>();
  for (const circle of circles(graph)) {
    if (circle.files.every((f) => known.has(f))) circle.files.forEach((f) => remaining.add(f));
    else unknown.push(`${circle.path}   (the component: ${circle.files.join(", ")})`);
  }
  return { unknown, remaining };
}

/** The violations not listed in `known`, and the listed ones that are no longer violations. */
function unlisted(
  violations: readonly Violation[],
  known: typeof KNOWN_VIOLATIONS,
): { fresh: string[]; stale: string[] } {
  const seen = new Set(violations.map((v) => `${v.rule}: ${v.from} -> ${v.to}`));
  const listed = new Set(Object.entries(known).flatMap(([rule, list]) => list.map((edge) => `${rule}: ${edge}`)));
  return {
    fresh: violations
      .filter((v) => !listed.has(`${v.rule}: ${v.from} -> ${v.to}`))
      .map((v) => (v.rule === "unplaced" ? `${v.from} is in no layer` : `${v.rule}: ${v.from} -> ${v.to} (${v.why})`)),
    stale: [...listed].filter((entry) => !seen.has(entry)),
  };
}

describe("the import graph", () => {
  const files = [...sourcesUnder("broker"), ...sourcesUnder("jail-runtime"), ...sourcesUnder("packages")];
  const graph = importGraph(files);

  test("the graph is the real one: it holds type-only, dynamic and re-export imports", () => {
    // import type (broker/registry/migrations.ts), a dynamic import() (fleet.ts), export ... from (broker/index.ts).
    expect(graph.get("broker/registry/migrations.ts")?.has("broker/registry/installed.ts")).toBe(true);
    expect(graph.get("broker/fleet.ts")?.has("broker/init/init-lines.ts")).toBe(true);
    expect(graph.get("broker/index.ts")?.has("broker/broker.ts")).toBe(true);
    expect(graph.get("packages/pack.ts")?.has("broker/sdk/pack.ts")).toBe(true);
  });

  test("no file imports itself and there are no circles (but the Broker's, which only shrinks)", () => {
    const { unknown, remaining } = unknownCircles(graph, KNOWN_BROKER_CIRCLE);
    expect(unknown).toEqual([]);
    const left = [...KNOWN_BROKER_CIRCLE].filter((f) => !remaining.has(f));
    if (left.length > 0) {
      console.log(
        `The Broker circle shrank: take these out of KNOWN_BROKER_CIRCLE in tests/unit/layering.test.ts:\n  ${left.join("\n  ")}`,
      );
    }
  });

  test("every file is in a layer, and no import goes up the layers, across stacks, between peers or to the Broker", () => {
    const { fresh, stale } = unlisted(layerViolations(graph, RULES), KNOWN_VIOLATIONS);
    expect(fresh).toEqual([]);
    // The exceptions only shrink: one that no longer holds is taken out of KNOWN_VIOLATIONS.
    expect(stale).toEqual([]);
  });

  test("the layer list names each folder once, and places what it is about", () => {
    const members = LAYERS.flatMap((l) => l.members);
    expect(members.filter((m, i) => members.indexOf(m) !== i)).toEqual([]);
    const layerOf = (file: string): string | undefined => {
      const at = place(LAYERS, file);
      return at === null ? undefined : LAYERS[at.layer]!.name;
    };
    expect(layerOf("jail-runtime/wire/frames.ts")).toBe("wire");
    expect(layerOf("broker/base/errors.ts")).toBe("base");
    expect(layerOf("broker/store/open.ts")).toBe("infrastructure");
    expect(layerOf("broker/sessions/session.ts")).toBe("features");
    expect(layerOf("broker/broker.ts")).toBe("composition root");
    expect(layerOf("broker/cli/main.ts")).toBe("programs");
  });
});

describe("the import graph checker", () => {
  const layers: Layer[] = [
    { name: "bottom", members: ["low/"] },
    { name: "middle", members: ["mid/", "root.ts"] },
    { name: "top", apart: true, members: ["top/a/", "top/b/"] },
  ];
  const rules: LayerRules = { layers, broker: { file: "root.ts", importers: ["top"] } };

  test("it names a circle as a path, and a file that imports itself", () => {
    const graph = graphOf([
      ["low/x.ts", "low/y.ts"],
      ["low/y.ts", "low/z.ts"],
      ["low/z.ts", "low/x.ts"],
      ["low/self.ts", "low/self.ts"],
      ["low/y.ts", "low/free.ts"],
    ]);
    expect(circles(graph).map((c) => c.path)).toEqual([
      "low/self.ts → low/self.ts",
      "low/x.ts → low/y.ts → low/z.ts → low/x.ts",
    ]);
    expect(circles(graphOf([["low/a.ts", "low/b.ts"]]))).toEqual([]);
  });

  test("it reports an import up the layers, between peers, to the Broker, and a file in no layer", () => {
    const graph = graphOf([
      ["top/a/ok.ts", "mid/m.ts"],
      ["mid/m.ts", "low/l.ts"],
      ["low/l.ts", "mid/m.ts"],
      ["top/a/ok.ts", "top/b/peer.ts"],
      ["top/a/ok.ts", "top/a/same.ts"],
      ["mid/m.ts", "root.ts"],
      ["top/b/peer.ts", "root.ts"],
      ["stray.ts", "low/l.ts"],
    ]);
    expect(layerViolations(graph, rules).map((v) => `${v.rule}: ${v.from} -> ${v.to}`)).toEqual([
      "unplaced: stray.ts -> ",
      "upward: low/l.ts -> mid/m.ts",
      "imports the Broker: mid/m.ts -> root.ts",
      "sideways: top/a/ok.ts -> top/b/peer.ts",
    ]);
  });

  test("the exceptions: an unknown circle fails beside the known one; a listed edge that is gone is stale", () => {
    const graph = graphOf([
      ["low/a.ts", "low/b.ts"],
      ["low/b.ts", "low/a.ts"],
      ["low/c.ts", "low/d.ts"],
      ["low/d.ts", "low/c.ts"],
    ]);
    const { unknown, remaining } = unknownCircles(graph, new Set(["low/a.ts", "low/b.ts", "low/e.ts"]));
    expect(unknown).toEqual(["low/c.ts → low/d.ts → low/c.ts   (the component: low/c.ts, low/d.ts)"]);
    expect([...remaining].sort()).toEqual(["low/a.ts", "low/b.ts"]);
    // A file joining the known circle makes it unknown.
    const joined = graphOf([
      ["low/a.ts", "low/b.ts"],
      ["low/b.ts", "low/x.ts"],
      ["low/x.ts", "low/a.ts"],
    ]);
    expect(unknownCircles(joined, new Set(["low/a.ts", "low/b.ts"])).unknown).toHaveLength(1);
    const { fresh, stale } = unlisted(layerViolations(graphOf([["low/l.ts", "mid/m.ts"]]), rules), {
      "imports the Broker": ["mid/m.ts -> root.ts"],
      "crosses stacks": [],
      upward: [],
      sideways: [],
    });
    expect(fresh).toEqual(["upward: low/l.ts -> mid/m.ts (bottom imports middle, above it)"]);
    expect(stale).toEqual(["imports the Broker: mid/m.ts -> root.ts"]);
  });

  test("it reports an import from one stack into another, either way, but not into a shared layer", () => {
    const stacked: Layer[] = [
      { name: "shared", members: ["wire/"] },
      { name: "guest", stack: "guest", members: ["guest/"] },
      { name: "host", stack: "host", members: ["host/"] },
    ];
    const graph = graphOf([
      ["guest/g.ts", "wire/w.ts"],
      ["host/h.ts", "wire/w.ts"],
      ["host/h.ts", "guest/g.ts"],
      ["guest/g.ts", "host/h.ts"],
    ]);
    const found = layerViolations(graph, { layers: stacked, broker: { file: "none.ts", importers: [] } });
    expect(found.map((v) => `${v.rule}: ${v.from} -> ${v.to}`)).toEqual([
      "crosses stacks: guest/g.ts -> host/h.ts",
      "crosses stacks: host/h.ts -> guest/g.ts",
    ]);
  });
});
