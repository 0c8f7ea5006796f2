/**
 * Import boundaries, re-checked from the source: `jail-runtime/` never imports
 * `broker/`; the shared wire imports nothing runtime-specific; the broker reaches
 * into `jail-runtime/` only for the wire; the contracts every layer shares live
 * in `broker/base/`, which imports no other broker folder, and the satellite,
 * the capabilities and the sessions meet there rather than in one another's
 * files; only `broker/store/` (and `broker/registry/`) touches SQLite, drizzle
 * and the schema; and the environment is read at the edge only: `broker/cli/`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Repo-relative paths (with `/`) of every .ts file under `dir`. */
function sourcesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string): void => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const path = join(abs, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) out.push(relative(REPO, path).split(sep).join("/"));
    }
  };
  walk(join(REPO, dir));
  return out.sort();
}

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

/** Where a relative specifier points, repo-relative with a .ts extension; null for packages and `node:`. */
function target(file: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  const abs = resolve(REPO, dirname(file), specifier).replace(/\.js$/, ".ts");
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
      "jail-runtime/wire/codec.ts",
      "jail-runtime/wire/codes.ts",
      "jail-runtime/wire/document-bounds.ts",
      "jail-runtime/wire/events.ts",
      "jail-runtime/wire/frames.ts",
      "jail-runtime/wire/kv-args.ts",
      "jail-runtime/wire/kv-cas.ts",
      "jail-runtime/wire/provider-kinds.ts",
      "jail-runtime/wire/rate.ts",
      "jail-runtime/wire/service-kinds.ts",
      "jail-runtime/wire/session-kinds.ts",
      "jail-runtime/wire/sql-allowlist.ts",
      "jail-runtime/wire/version.ts",
    ]);
  });

  test("nothing under jail-runtime/ imports from broker/", () => {
    const offending = edges(jailFiles).filter(
      (e) => e.to?.startsWith("broker/") || /(^|\/)broker(\/|$)/.test(e.specifier),
    );
    expect(offending).toEqual([]);
  });

  test("jail-runtime/ imports only its own files, valibot and msgpackr", () => {
    const outside = edges(jailFiles).filter((e) =>
      e.to === null ? !["valibot", "msgpackr"].includes(e.specifier) : !e.to.startsWith("jail-runtime/"),
    );
    expect(outside).toEqual([]);
  });

  test("jail-runtime/wire/ imports only valibot, msgpackr and other wire files", () => {
    const offending = edges(wireFiles).filter((e) =>
      e.to === null ? !["valibot", "msgpackr"].includes(e.specifier) : !e.to.startsWith("jail-runtime/wire/"),
    );
    expect(offending).toEqual([]);
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
