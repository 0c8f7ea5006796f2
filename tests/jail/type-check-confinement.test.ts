/**
 * The type check reads what the sources name and the bundle never follows
 * (`/// <reference>`, `import type`, `@ts-types`, a package's `types`, …): it
 * runs in a host-side jail, so a host file named by any of those forms, in
 * any spelling, is not there to read. Each probe plants a host declaration
 * file holding a unique literal and a type error that would print it; the
 * literal must appear nowhere in what the check reports. A control run puts
 * the same targets inside the folder, where each form must print its literal
 * (so every probe is one that could fail).
 */
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { randomBytes } from "node:crypto";
import { typeCheck, type TypeCheck } from "../../broker/install/type-check.js";
import { readManifest } from "../../broker/install/manifest.js";
import { envJail, envOptions } from "../support/env-options.js";

const MANIFEST = `name = "probe"\nversion = "0.1.0"\ndescription = "type-check probe"\nentry = "index.ts"\n\n[[tool]]\nname = "t"\ndescription = "t"\n`;

let base: string;
let hostDir: string;
let counter = 0;
const literal = (form: string) => `TETHER_TYPE_SECRET_${form.replace(/\W/g, "_")}_${randomBytes(6).toString("hex")}`;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "tether-type-confine-"));
  hostDir = join(base, "host");
  mkdirSync(hostDir);
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

function write(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** The files a form's target consists of, declaring `lit` (a script for global forms, a module otherwise). */
interface Target {
  /** File name → text, in the target's folder. */
  readonly files: (lit: string) => Record<string, string>;
  /** The file a specifier names. */
  readonly main: string;
}
const GLOBAL: Target = { files: (lit) => ({ "leak.d.ts": `type Leak = "${lit}";\n` }), main: "leak.d.ts" };
const MODULE: Target = {
  files: (lit) => ({ "leak.ts": `export type Leak = "${lit}";\nexport declare const leak: Leak;\n` }),
  main: "leak.ts",
};
const DECLARATION: Target = {
  files: (lit) => ({ "leak.d.ts": `export declare const leak: "${lit}";\n` }),
  main: "leak.d.ts",
};

/** One form deno check follows: the target it reads, and the folder's files given the specifier of the target. */
interface Form {
  readonly target: Target;
  /** The folder a relative specifier is read from, in the extension folder (default: the entry's). */
  readonly from?: string;
  readonly folder: (spec: string) => Record<string, string>;
}
const ERROR = `const probe: Leak = 1;\nexport { probe };\n`;

const FORMS: Record<string, Form> = {
  "/// <reference path>": {
    target: GLOBAL,
    folder: (spec) => ({ "index.ts": `/// <reference path="${spec}" />\n${ERROR}` }),
  },
  "/// <reference types>": {
    target: GLOBAL,
    folder: (spec) => ({ "index.ts": `/// <reference types="${spec}" />\n${ERROR}` }),
  },
  "import type": {
    target: MODULE,
    folder: (spec) => ({ "index.ts": `import type { Leak } from "${spec}";\n${ERROR}` }),
  },
  "export type from (read back)": {
    target: MODULE,
    folder: (spec) => ({
      "index.ts": `export type { Leak } from "${spec}";\nimport type { Leak } from "./index.ts";\n${ERROR}`,
    }),
  },
  "a type query import()": {
    target: MODULE,
    folder: (spec) => ({ "index.ts": `type Leak = import("${spec}").Leak;\n${ERROR}` }),
  },
  "// @ts-types": {
    target: DECLARATION,
    folder: (spec) => ({
      "plain.js": "export const leak = 1;\n",
      "index.ts": `// @ts-types="${spec}"\nimport { leak } from "./plain.js";\nconst probe: typeof leak = 1;\nexport { probe };\n`,
    }),
  },
  "// @deno-types": {
    target: DECLARATION,
    folder: (spec) => ({
      "plain.js": "export const leak = 1;\n",
      "index.ts": `// @deno-types="${spec}"\nimport { leak } from "./plain.js";\nconst probe: typeof leak = 1;\nexport { probe };\n`,
    }),
  },
  "a vendored package's types field": {
    target: DECLARATION,
    from: "node_modules/typed",
    folder: (spec) => ({
      "node_modules/typed/package.json": JSON.stringify({
        name: "typed",
        version: "1.0.0",
        main: "index.js",
        types: spec,
      }),
      "node_modules/typed/index.js": "export const leak = 1;\n",
      "index.ts": `import type { leak } from "typed";\nconst probe: typeof leak = 1;\nexport { probe };\n`,
    }),
  },
};

/** How a probe names a host target from the folder's entry. */
const SPELLINGS: Record<string, (target: string, entryDir: string) => string> = {
  "an absolute path": (target) => target,
  "a file:// URL": (target) => pathToFileURL(target).href,
  "a ../ escape": (target, entryDir) => relative(entryDir, target),
};

async function check(
  files: Record<string, string>,
  layout: (dir: string) => void = () => {},
): Promise<{ dir: string; result: TypeCheck }> {
  const dir = join(base, `ext-${++counter}`);
  mkdirSync(dir);
  write(dir, { "manifest.toml": MANIFEST, ...files });
  layout(dir);
  const result = await typeCheck(dir, readManifest(dir), {
    jail: envJail(),
    ...(envOptions().sandbox !== undefined ? { sandbox: envOptions().sandbox } : {}),
  });
  return { dir, result };
}

/** Plants the target on the host, in its own folder; returns the main file's path. */
function plantOnHost(target: Target, lit: string): string {
  const dir = join(hostDir, `t-${++counter}`);
  mkdirSync(dir);
  write(dir, target.files(lit));
  return join(dir, target.main);
}

const PROBES = Object.keys(FORMS).flatMap((form) =>
  Object.keys(SPELLINGS).map((spelling) => [form, spelling] as const),
);

describe("a host file named by any form deno check follows, in any spelling, is not readable from the check", () => {
  test.each(PROBES)("%s, as %s", async (formName, spellingName) => {
    const form = FORMS[formName]!;
    const lit = literal(formName);
    const hostFile = plantOnHost(form.target, lit);
    const dir = join(base, `ext-${counter + 1}`, form.from ?? ".");
    const { result } = await check(form.folder(SPELLINGS[spellingName]!(hostFile, dir)));
    // Some spellings are not read by Deno at all (a file:// URL as a package's types); none may show the literal.
    expect(JSON.stringify(result)).not.toContain(lit);
  });

  test.each([
    [
      "a symlink in the folder to the host file",
      (dir: string, hostFile: string) => symlinkSync(hostFile, join(dir, "linked.d.ts")),
    ],
    [
      "a hard link in the folder to the host file",
      (dir: string, hostFile: string) => linkSync(hostFile, join(dir, "linked.d.ts")),
    ],
  ])("%s, named by /// <reference path>", async (_what, link) => {
    const lit = literal("linked");
    const hostFile = plantOnHost(GLOBAL, lit);
    const { result } = await check({ "index.ts": `/// <reference path="./linked.d.ts" />\n${ERROR}` }, (dir) =>
      link(dir, hostFile),
    );
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain(lit);
  });
});

describe("control: the same forms with their targets inside the folder print each literal", () => {
  test.each(Object.keys(FORMS))("%s", async (formName) => {
    const form = FORMS[formName]!;
    const lit = literal(formName);
    const targetFiles = Object.fromEntries(
      Object.entries(form.target.files(lit)).map(([name, text]) => [join(form.from ?? ".", "types", name), text]),
    );
    const { result } = await check({ ...targetFiles, ...form.folder(`./types/${form.target.main}`) });
    expect(result.ok).toBe(false);
    expect(result.errors.map((e) => e.message).join("\n")).toContain(lit);
  });
});

describe("the jail's own /proc tells nothing of the host's kernel to the report", () => {
  const hostTokens = (path: string): string[] => {
    try {
      return [
        ...new Set(
          readFileSync(path, "utf8")
            .split(/[^A-Za-z0-9_.-]+/)
            .filter((t) => t.length >= 6),
        ),
      ];
    } catch {
      return [];
    }
  };

  test.each([
    "/proc/cmdline",
    "/proc/version",
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/version",
  ])("%s, linked into the folder and imported as JSON", async (path) => {
    const tokens = hostTokens(path);
    const { result } = await check(
      { "index.ts": `import x from "./leak.json" with { type: "json" };\nexport const y: number = x;\n` },
      (dir) => symlinkSync(path, join(dir, "leak.json")),
    );
    const report = JSON.stringify(result);
    expect(tokens.filter((t) => report.includes(t))).toEqual([]);
  });

  test("the host's name, through /// <reference path> of /proc/sys/kernel/hostname", async () => {
    const host = readFileSync("/proc/sys/kernel/hostname", "utf8").trim();
    const { result } = await check({
      "index.ts": `/// <reference path="/proc/sys/kernel/hostname" />\nexport const y = 1;\n`,
    });
    expect(JSON.stringify(result)).not.toContain(`'${host}'`);
  });
});
