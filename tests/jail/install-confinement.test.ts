/**
 * Install-time confinement, probed as a class: every kind of importing file ×
 * every spelling of a target outside the extension folder × every import
 * position is an install error naming the offender, and the host secret appears
 * nowhere (not in the error, not in an artifact). The positive cases — vendored
 * packages, the SDK and its packages, every example extension — still bundle.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { randomBytes } from "node:crypto";
import { bundleExtension } from "../../broker/install/bundle.js";
import { bundleFolder, runtimeRoot } from "../../broker/install/bundle-core.js";
import { copyExactly } from "../../broker/jail/copy-exactly.js";
import {
  FOLDER_DEPTH,
  FOLDER_ENTRIES,
  FOLDER_FILE_BYTES,
  FOLDER_TOTAL_BYTES,
  snapshotFolder,
} from "../../broker/install/folder-snapshot.js";
import { scanArtifact } from "../../broker/install/artifact-scan.js";
import { MANIFEST_BYTES, readManifest } from "../../broker/install/manifest.js";
import { envBundleCache } from "../support/env-options.js";
import { checkExtension } from "../../broker/install/check.js";
import { TetherError } from "../../broker/base/errors.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const TOKEN = `TETHER_HOST_SECRET_${randomBytes(8).toString("hex")}`;
const TOOL = `import { outcome, text } from "@tether/ext";\nexport const tools = { t: () => outcome([text("ok")]) };\n`;
const MANIFEST = `name = "probe"\nversion = "0.1.0"\ndescription = "confinement probe"\nentry = "index.ts"\n\n[[tool]]\nname = "t"\ndescription = "t"\n`;

let root: string;
/** The host's secret files live in an ancestor's node_modules/: a path with "/node_modules/" in it must not be trusted. */
let host: string;
let counter = 0;
const servers: Server[] = [];
const canMknod = process.getuid?.() === 0;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "tether-confine-"));
  host = join(root, "node_modules", "hostpkg");
  mkdirSync(host, { recursive: true });
  writeFileSync(join(host, "package.json"), `{"name": "hostpkg", "version": "1.0.0", "main": "secret.js"}\n`);
  writeFileSync(join(host, "secret.js"), `export default "${TOKEN}-js"; export const leak = "${TOKEN}-js";\n`);
  writeFileSync(join(host, "secret.json"), `{"leak": "${TOKEN}-json"}\n`);
  writeFileSync(join(host, "secret.txt"), `${TOKEN}-txt\n`);
  // Not JSON: a parser that reads it would echo its first token.
  writeFileSync(join(host, "not-json"), `${TOKEN} is the first token\n`);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
  rmSync(root, { recursive: true, force: true });
});

function write(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

function extension(files: Record<string, string>): string {
  const dir = join(root, `ext-${++counter}`);
  mkdirSync(dir);
  write(dir, { "manifest.toml": MANIFEST, ...files });
  return dir;
}

/** Bundles `dir`; whatever happens, the host secret must not be in the error or the artifact. */
async function outcomeOf(dir: string): Promise<{ error?: TetherError; code?: string }> {
  let code: string | undefined;
  let error: unknown;
  try {
    ({ code } = await bundleExtension(dir, readManifest(dir), envBundleCache()));
  } catch (err) {
    error = err;
  }
  if (code !== undefined) {
    expect(code).not.toContain(TOKEN);
    return { code };
  }
  expect(error).toBeInstanceOf(TetherError);
  expect((error as TetherError).message).not.toContain(TOKEN);
  return { error: error as TetherError };
}

async function refusal(dir: string): Promise<string> {
  const { error } = await outcomeOf(dir);
  if (error === undefined) throw new Error("bundling succeeded but should have been refused");
  expect(error.code).toBe("install_failed");
  return error.message;
}

// ── the matrix ────────────────────────────────────────────────────────────────

type Attr = "none" | "text" | "json" | "bytes";
const ATTRS: readonly Attr[] = ["none", "text", "json", "bytes"];
/** The host file each attribute would inline. */
const HOST_FILE: Record<Attr, string> = {
  none: "secret.js",
  text: "secret.txt",
  json: "secret.json",
  bytes: "secret.txt",
};
const SUFFIX: Record<Attr, string> = { none: ".js", text: ".txt", json: ".json", bytes: ".bin" };

/** Where the offending import sits: its file (relative to the extension), and the layout that reaches it from the entry. */
interface Importer {
  readonly file: string;
  /** Its directory as esbuild sees it (symlinks resolved), relative to the extension. */
  readonly realDir: string;
  readonly layout: (dir: string) => void;
  readonly source: (probe: string) => string;
}

const IMPORTERS: Record<string, Importer> = {
  "the entry file": {
    file: "index.ts",
    realDir: ".",
    layout: () => {},
    source: (probe) => `${probe}\n${TOOL}`,
  },
  "a nested file": {
    file: "lib/deep/nested.ts",
    realDir: "lib/deep",
    layout: (dir) =>
      write(dir, { "index.ts": `import { leak } from "./lib/deep/nested.ts";\n${TOOL}export const probe = leak;\n` }),
    source: (probe) => probe,
  },
  "a file under the extension's node_modules/": {
    file: "node_modules/vendored/index.js",
    realDir: "node_modules/vendored",
    layout: (dir) =>
      write(dir, {
        "node_modules/vendored/package.json": `{"name": "vendored", "version": "1.0.0", "main": "index.js"}\n`,
        "index.ts": `import { leak } from "vendored";\n${TOOL}export const probe = leak;\n`,
      }),
    source: (probe) => probe,
  },
  "a file reached through a symlinked dir": {
    file: "real/mod.ts",
    realDir: "real",
    layout: (dir) => {
      write(dir, { "index.ts": `import { leak } from "./linked/mod.ts";\n${TOOL}export const probe = leak;\n` });
      mkdirSync(join(dir, "real"));
      symlinkSync("real", join(dir, "linked"));
    },
    source: (probe) => probe,
  },
};

/** An extension whose importer holds `probe`, after `before` has put the target beside it. */
async function probeExtension(
  importer: Importer,
  before: (importerDir: string) => Promise<string> | string,
): Promise<string> {
  const dir = extension({});
  importer.layout(dir);
  const importerDir = join(dir, importer.realDir);
  mkdirSync(importerDir, { recursive: true });
  write(dir, { [importer.file]: importer.source(await before(importerDir)) });
  return dir;
}

/** One spelling of an outside target: the specifier, what it needs on disk, and what the refusal must name. */
interface Spelling {
  readonly attrs: readonly Attr[];
  readonly make: (importerDir: string, attr: Attr) => Promise<{ spec: string; names: string[] }>;
}

const SPECIAL = ["none", "text"] as const satisfies readonly Attr[];

const SPELLINGS: Record<string, Spelling> = {
  "an absolute path": {
    attrs: ATTRS,
    make: async (_dir, attr) => {
      const spec = join(host, HOST_FILE[attr]);
      return { spec, names: [`'${spec}'`] };
    },
  },
  "a file:/// URL": {
    attrs: ATTRS,
    make: async (_dir, attr) => {
      const spec = pathToFileURL(join(host, HOST_FILE[attr])).href;
      return { spec, names: [`'${spec}'`] };
    },
  },
  "a ../ escape": {
    attrs: ATTRS,
    make: async (dir, attr) => {
      const spec = relative(dir, join(host, HOST_FILE[attr]));
      return { spec, names: [`'${spec}'`, "reaches outside the extension folder"] };
    },
  },
  "a package outside the folder": {
    attrs: ATTRS,
    make: async (_dir, attr) => {
      const spec = attr === "none" ? "hostpkg" : `hostpkg/${HOST_FILE[attr]}`;
      return { spec, names: [`'${spec}'`, "is not allowed"] };
    },
  },
  "a symlink to outside": {
    attrs: ATTRS,
    make: async (dir, attr) => {
      symlinkSync(join(host, HOST_FILE[attr]), join(dir, `outside-link${SUFFIX[attr]}`));
      const spec = `./outside-link${SUFFIX[attr]}`;
      return { spec, names: [`'${spec}'`, "reaches outside the extension folder"] };
    },
  },
  "a hard link to a host file": {
    attrs: ATTRS,
    make: async (dir, attr) => {
      linkSync(join(host, HOST_FILE[attr]), join(dir, `hard${SUFFIX[attr]}`));
      return {
        spec: `./hard${SUFFIX[attr]}`,
        names: [`hard${SUFFIX[attr]}' is a hard link`, "copy the file into the extension folder"],
      };
    },
  },
  "a FIFO": {
    attrs: SPECIAL,
    make: async (dir, attr) => {
      execFileSync("mkfifo", [join(dir, `fifo${SUFFIX[attr]}`)]);
      return { spec: `./fifo${SUFFIX[attr]}`, names: [`fifo${SUFFIX[attr]}' is a FIFO`] };
    },
  },
  "a socket": {
    attrs: SPECIAL,
    make: async (dir, attr) => {
      const path = join(dir, `sock${SUFFIX[attr]}`);
      const server = createServer();
      servers.push(server);
      await new Promise<void>((done) => server.listen(path, done));
      return { spec: `./sock${SUFFIX[attr]}`, names: [`sock${SUFFIX[attr]}' is a socket`] };
    },
  },
  ...(canMknod
    ? {
        "a device": {
          attrs: SPECIAL,
          make: async (dir: string, attr: Attr) => {
            // A twin of /dev/null (a disk's twin would read the host's disk).
            execFileSync("mknod", [join(dir, `dev${SUFFIX[attr]}`), "c", "1", "3"]);
            return { spec: `./dev${SUFFIX[attr]}`, names: [`dev${SUFFIX[attr]}' is a device`] };
          },
        },
      }
    : {}),
  "a directory as a file": {
    attrs: SPECIAL,
    make: async (dir, attr) => {
      mkdirSync(join(dir, `dir${SUFFIX[attr]}`));
      return { spec: `./dir${SUFFIX[attr]}`, names: [`'./dir${SUFFIX[attr]}'`] };
    },
  },
};

const POSITIONS: Record<string, (spec: string, attr: Attr) => string> = {
  "a static import": (spec, attr) =>
    `import leak from ${JSON.stringify(spec)}${attr === "none" ? "" : ` with { type: "${attr}" }`};\nexport { leak };\n`,
  "an export-from": (spec, attr) =>
    `export { default as leak } from ${JSON.stringify(spec)}${attr === "none" ? "" : ` with { type: "${attr}" }`};\n`,
  "a literal import() in try/catch": (spec, attr) =>
    `export const leak = async () => {\n  try {\n    return await import(${JSON.stringify(spec)}${attr === "none" ? "" : `, { with: { type: "${attr}" } }`});\n  } catch {\n    return undefined;\n  }\n};\n`,
};

const PROBES = Object.entries(IMPORTERS).flatMap(([importer, i]) =>
  Object.entries(SPELLINGS).flatMap(([spelling, s]) =>
    Object.keys(POSITIONS).flatMap((position) => s.attrs.map((attr) => [importer, spelling, position, attr] as const)),
  ),
);

describe("every importer × outside spelling × position is refused, naming the offender, leaking nothing", () => {
  test.concurrent.each(PROBES)(
    "%s: %s in %s (attribute: %s)",
    async (importerName, spellingName, positionName, attr) => {
      const importer = IMPORTERS[importerName]!;
      let names: string[] = [];
      const dir = await probeExtension(importer, async (importerDir) => {
        const made = await SPELLINGS[spellingName]!.make(importerDir, attr);
        names = made.names;
        return POSITIONS[positionName]!(made.spec, attr);
      });
      const message = await refusal(dir);
      for (const name of names) expect(message).toContain(name);
      if (!["a hard link to a host file", "a FIFO", "a socket", "a device"].includes(spellingName)) {
        // Refused where the import is made: the message names the file that made it.
        expect(message).toContain(`in ${importer.file}`);
      }
    },
  );
});

describe.each(Object.entries(IMPORTERS))("from %s", (_name, importer) => {
  test("a glob-style import() escaping the folder finds nothing in the bundling jail: the host's files are not there", async () => {
    const dir = await probeExtension(
      importer,
      (importerDir) => `export const leak = (name) => import(\`${relative(importerDir, host)}/secret\${name}.txt\`);\n`,
    );
    const message = await refusal(dir);
    expect(message).toContain(
      `${importer.file}:1: Could not resolve import("${relative(join(dir, importer.realDir), host)}/secret*.txt")`,
    );
  });

  test("the confinement plugin alone (no jail) refuses the same glob at load (esbuild reads the matches without asking onResolve)", async () => {
    const dir = await probeExtension(
      importer,
      (importerDir) => `export const leak = (name) => import(\`${relative(importerDir, host)}/secret\${name}.txt\`);\n`,
    );
    const error = await bundleFolder(realpathSync(dir), runtimeRoot(), readManifest(dir)).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error?.message).toContain(`is outside the extension folder (it is ${join(host, "secret.txt")})`);
    expect(error?.message).not.toContain(TOKEN);
  });
});

// ── the entry file and the files esbuild reads on its own ─────────────────────

test.each([
  [
    "a hard link to a host file",
    (dir: string) => linkSync(join(host, "secret.js"), join(dir, "index.ts")),
    "file 'index.ts' is a hard link",
  ],
  [
    "a symlink to a host file",
    (dir: string) => symlinkSync(join(host, "secret.js"), join(dir, "index.ts")),
    "entry 'index.ts' reaches outside the extension folder",
  ],
  ["a FIFO", (dir: string) => execFileSync("mkfifo", [join(dir, "index.ts")]), "file 'index.ts' is a FIFO"],
])("an entry file that is %s is refused", async (_what, make, expected) => {
  const dir = extension({});
  make(dir);
  expect(await refusal(dir)).toContain(expected);
});

test.each([
  ["a symlink to a host file", (path: string) => symlinkSync(join(host, "not-json"), path), "is a symlink to"],
  ["a hard link to a host file", (path: string) => linkSync(join(host, "not-json"), path), "is a hard link"],
  ["a FIFO (esbuild would block reading it)", (path: string) => execFileSync("mkfifo", [path]), "is a FIFO"],
])("a vendored package.json that is %s is refused before esbuild reads it", async (_what, make, expected) => {
  const dir = extension({
    "node_modules/vendored/index.js": "export const leak = 1;\n",
    "index.ts": `import { leak } from "vendored";\n${TOOL}export const probe = leak;\n`,
  });
  make(join(dir, "node_modules/vendored/package.json"));
  expect(await refusal(dir)).toContain(`'node_modules/vendored/package.json' ${expected}`);
});

test.each([
  [
    "tsconfig.json is a symlink to a host file",
    (dir: string) => symlinkSync(join(host, "not-json"), join(dir, "tsconfig.json")),
  ],
  [
    "tsconfig.json extends a host file",
    (dir: string) => writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ extends: join(host, "not-json") })),
  ],
  [
    "jsconfig.json is a symlink to a host file",
    (dir: string) => symlinkSync(join(host, "not-json"), join(dir, "jsconfig.json")),
  ],
])("no tsconfig is read (%s): it bundles and the host file appears nowhere", async (_what, make) => {
  const dir = extension({ "index.ts": TOOL });
  make(dir);
  const { error, code } = await outcomeOf(dir);
  expect(error).toBeUndefined();
  expect(code).toContain("serving");
});

test("the SDK's own packages are trusted by real path only when the SDK imports them, not by name or from an extension", async () => {
  const valibot = join(REPO, "node_modules/valibot/package.json");
  expect(existsSync(valibot)).toBe(true);
  const message = await refusal(
    extension({
      "index.ts": `import * as v from ${JSON.stringify(join(REPO, "node_modules/valibot/dist/index.mjs"))};\n${TOOL}export const s = v;\n`,
    }),
  );
  expect(message).toContain("node_modules/valibot/dist/index.mjs' in index.ts reaches outside the extension folder");
  expect(
    await refusal(extension({ "index.ts": `import * as v from "valibot";\n${TOOL}export const s = v;\n` })),
  ).toContain("import 'valibot' in index.ts is not allowed");
});

// ── the artifact scan ─────────────────────────────────────────────────────────

const LEFT_SPECS = [
  "file:///etc/hostname",
  "/etc/hostname",
  "../outside.js",
  "./inside.js",
  "bare-package",
  "npm:left-pad",
  "https://example.com/x.js",
];
const LEFT_SHAPES: Record<string, (spec: string) => string> = {
  "a static import": (s) => `import x from ${JSON.stringify(s)};\nexport { x };\n`,
  "a static text import": (s) => `import x from ${JSON.stringify(s)} with { type: "text" };\nexport { x };\n`,
  "a side-effect import": (s) => `import ${JSON.stringify(s)};\n`,
  "an export-from": (s) => `export { default as x } from ${JSON.stringify(s)} with { type: "json" };\n`,
  "an export-star": (s) => `export * from ${JSON.stringify(s)};\n`,
  "a literal import() in try/catch": (s) =>
    `export const f = async () => { try { return await import(${JSON.stringify(s)}, { with: { type: "bytes" } }); } catch { return undefined; } };\n`,
  "a template import() with no substitutions": (s) => `export const f = () => import(\`${s}\`);\n`,
};

test.each(Object.keys(LEFT_SHAPES).flatMap((shape) => LEFT_SPECS.map((spec) => [shape, spec] as const)))(
  "an artifact still making %s of '%s' is an install error naming it",
  async (shape, spec) => {
    const artifact = `var x0 = 1;\n${LEFT_SHAPES[shape]!(spec)}await Promise.resolve(x0);\n`;
    await expect(scanArtifact(artifact, "probe")).rejects.toThrow(`'${spec}', which the bundle did not inline`);
  },
);

test.each([
  ["a computed import()", "export const f = (p) => import(p);\n"],
  ["import.meta.resolve (Deno loads nothing)", 'export const f = () => import.meta.resolve("file:///etc/hostname");\n'],
  [
    "a Worker (Deno checks its read)",
    'export const f = () => new Worker(new URL("file:///etc/hostname", import.meta.url), { type: "module" });\n',
  ],
  ["import syntax inside a string", 'export const s = "import x from \\"file:///etc/hostname\\"";\n'],
])("an artifact with %s is self-contained", async (_what, artifact) => {
  await expect(scanArtifact(artifact, "probe")).resolves.toBeUndefined();
});

// ── what must still bundle ────────────────────────────────────────────────────

test("vendored packages in the extension's own node_modules/ (also symlinked, workspace-style) and symlinks inside the folder bundle", async () => {
  const dir = extension({
    "node_modules/vendored/package.json": `{"name": "vendored", "version": "1.0.0", "type": "module", "exports": {".": "./index.js"}}\n`,
    "node_modules/vendored/index.js": `import { dep } from "vendored-dep";\nimport { util } from "./util.js";\nexport const leak = "VENDORED_MARK" + dep + util;\n`,
    "node_modules/vendored/util.js": `export const util = "UTIL_MARK";\n`,
    "node_modules/vendored-dep/package.json": `{"name": "vendored-dep", "version": "1.0.0", "main": "main.js"}\n`,
    "node_modules/vendored-dep/main.js": `export const dep = "DEP_MARK";\n`,
    "packages/linked/package.json": `{"name": "linked", "version": "1.0.0", "module": "mod.js"}\n`,
    "packages/linked/mod.js": `export const linked = "LINKED_MARK";\n`,
    "data/real.json": `{"mark": "JSON_MARK"}\n`,
    "index.ts": `import { leak } from "vendored";\nimport { linked } from "linked";\nimport data from "./data/link.json" with { type: "json" };\n${TOOL}export const all = leak + linked + data.mark;\n`,
  });
  symlinkSync("../packages/linked", join(dir, "node_modules/linked"));
  symlinkSync("real.json", join(dir, "data/link.json"));
  const { error, code } = await outcomeOf(dir);
  expect(error).toBeUndefined();
  for (const mark of ["VENDORED_MARK", "UTIL_MARK", "DEP_MARK", "LINKED_MARK", "JSON_MARK"])
    expect(code).toContain(mark);
});

test("the SDK (both aliases) and its packages bundle", async () => {
  const dir = extension({
    "index.ts": `import { decodeArgs, v } from "@tether/ext";\nimport { kv } from "@tether/cap";\n${TOOL}export const s = [decodeArgs, v.string(), kv];\n`,
  });
  const { error, code } = await outcomeOf(dir);
  expect(error).toBeUndefined();
  // valibot is reached only through the SDK (an extension may not import it: see above).
  expect(code).toContain(`// ${relative(dir, realpathSync(join(REPO, "node_modules/valibot")))}/`);
});

const EXAMPLES = readdirSync(join(REPO, "manifests")).filter((name) =>
  existsSync(join(REPO, "manifests", name, "manifest.toml")),
);

test("there are example extensions to bundle", () => {
  expect(EXAMPLES.length).toBeGreaterThan(0);
});

test.each(EXAMPLES)("the example extension manifests/%s bundles", async (name) => {
  const dir = join(REPO, "manifests", name);
  const artifact = await bundleExtension(dir, readManifest(dir), envBundleCache());
  expect(artifact.sha256).toMatch(/^[0-9a-f]{64}$/);
});

// ── bounds before reading ─────────────────────────────────────────────────────

describe("a folder is held to its bounds by lstat before a byte is read", () => {
  /** A sparse file: `bytes` long on paper, nothing on disk, slow only to read. */
  const sparse = (path: string, bytes: number) => {
    mkdirSync(dirname(path), { recursive: true });
    execFileSync("truncate", ["-s", String(bytes), path]);
  };

  test("a 2 GB sparse file imported as text is refused by its size, naming it and the limit", async () => {
    const dir = extension({
      "index.ts": `import big from "./data/big.txt" with { type: "text" };\n${TOOL}export const b = big;\n`,
    });
    sparse(join(dir, "data/big.txt"), 2 * 2 ** 30);
    expect(await refusal(dir)).toContain(
      `'data/big.txt' is 2048 MiB, over the ${FOLDER_FILE_BYTES / 2 ** 20} MiB a file of an extension may be`,
    );
  });

  test("so is one nobody imports, deep in node_modules/ (the folder is what is handed to the jail)", async () => {
    const dir = extension({ "index.ts": TOOL });
    sparse(join(dir, "node_modules/heavy/blob.bin"), FOLDER_FILE_BYTES + 1);
    expect(await refusal(dir)).toContain("'node_modules/heavy/blob.bin' is");
  });

  test("files each within the limit but over the folder's total are refused at the one that passes it", () => {
    const dir = extension({ "index.ts": TOOL });
    // Exactly the total in large files: the manifest and the entry take it past, at the last one.
    const count = Math.floor(FOLDER_TOTAL_BYTES / FOLDER_FILE_BYTES);
    for (let i = 0; i < count; i++) sparse(join(dir, `parts/p${String(i).padStart(2, "0")}.bin`), FOLDER_FILE_BYTES);
    expect(() => snapshotFolder(dir)).toThrow(
      `the folder's files come to more than ${FOLDER_TOTAL_BYTES / 2 ** 20} MiB (the limit), at 'parts/p${String(count - 1).padStart(2, "0")}.bin'`,
    );
  });

  test("more entries than the limit are refused", () => {
    const dir = extension({ "index.ts": TOOL });
    mkdirSync(join(dir, "many"));
    for (let i = 0; i < FOLDER_ENTRIES; i++) writeFileSync(join(dir, "many", `f${i}`), "");
    expect(() => snapshotFolder(dir)).toThrow(
      `the folder holds more than ${FOLDER_ENTRIES} files, folders and links (the limit)`,
    );
  });

  test("folders nested past the depth limit are refused", () => {
    const dir = extension({ "index.ts": TOOL });
    mkdirSync(join(dir, ...Array.from({ length: FOLDER_DEPTH + 2 }, () => "d")), { recursive: true });
    expect(() => snapshotFolder(dir)).toThrow(`is more than ${FOLDER_DEPTH} folders deep`);
  });

  test("the snapshot leaves .git/ out and keeps links as links", () => {
    const dir = extension({ "index.ts": TOOL, ".git/objects/x": "history" });
    symlinkSync(join(host, "secret.txt"), join(dir, "out-link"));
    const snap = snapshotFolder(dir);
    try {
      expect(existsSync(join(snap.dir, ".git"))).toBe(false);
      expect(readlinkSync(join(snap.dir, "out-link"))).toBe(join(host, "secret.txt"));
    } finally {
      snap.remove();
    }
  });
});

// ── the manifest: the one file of the folder the broker reads in its own process ──

describe("manifest.toml is read only as a regular file with one name, within its bound", () => {
  const manifestRefusal = (dir: string): string => {
    try {
      readManifest(dir);
    } catch (err) {
      expect(err).toBeInstanceOf(TetherError);
      expect((err as Error).message).not.toContain(TOKEN);
      return (err as Error).message;
    }
    throw new Error("the manifest was read");
  };
  const bare = (): string => {
    const dir = join(root, `ext-${++counter}`);
    mkdirSync(dir);
    return dir;
  };

  test.each([
    [
      "a symlink to a host file (a parse error would quote it)",
      (dir: string) => symlinkSync(join(host, "not-json"), join(dir, "manifest.toml")),
      "is a symlink",
    ],
    [
      "a hard link to a host file",
      (dir: string) => linkSync(join(host, "not-json"), join(dir, "manifest.toml")),
      "is a hard link",
    ],
    [
      "a FIFO (refused without waiting for a writer)",
      (dir: string) => execFileSync("mkfifo", [join(dir, "manifest.toml")]),
      "is not a regular file",
    ],
    ["a directory", (dir: string) => mkdirSync(join(dir, "manifest.toml")), "is not a regular file"],
    [
      "a 2 GB sparse file",
      (dir: string) => execFileSync("truncate", ["-s", String(2 * 2 ** 30), join(dir, "manifest.toml")]),
      `is ${2 * 2 ** 30} bytes, over the ${MANIFEST_BYTES}`,
    ],
  ])("%s is refused", (_what, make, expected) => {
    const dir = bare();
    make(dir);
    expect(manifestRefusal(dir)).toContain(expected);
  });

  test("the same refusal at install and at tether check (one reader)", async () => {
    const dir = bare();
    symlinkSync(join(host, "not-json"), join(dir, "manifest.toml"));
    const report = await checkExtension(dir, { jail: {}, types: false });
    expect(JSON.stringify(report)).toContain("is a symlink");
    expect(JSON.stringify(report)).not.toContain(TOKEN);
  });
});

describe("a file swapped between the snapshot's lstat and its copy is refused, never followed", () => {
  const seenThenSwap = (swap: (dir: string) => void) => {
    const dir = extension({ "lib/a.ts": "export const a = 1;\n" });
    const source = join(realpathSync(dir), "lib/a.ts");
    const seen = lstatSync(source);
    swap(realpathSync(dir));
    const target = join(mkdtempSync(join(root, "copy-")), "a.ts");
    expect(() => copyExactly(source, target, seen)).toThrow("changed while it was copied");
    expect(existsSync(target)).toBe(false);
  };

  test("the file replaced by a symlink to a host file", () => {
    seenThenSwap((dir) => {
      rmSync(join(dir, "lib/a.ts"));
      symlinkSync(join(host, "secret.js"), join(dir, "lib/a.ts"));
    });
  });

  test("its folder replaced by a symlink to a host folder holding a file of that name", () => {
    writeFileSync(join(host, "a.ts"), `export const leak = "${TOKEN}";\n`);
    seenThenSwap((dir) => {
      rmSync(join(dir, "lib"), { recursive: true });
      symlinkSync(host, join(dir, "lib"));
    });
  });

  test("the file replaced by a FIFO (no read blocks)", () => {
    seenThenSwap((dir) => {
      rmSync(join(dir, "lib/a.ts"));
      execFileSync("mkfifo", [join(dir, "lib/a.ts")]);
    });
  });

  test("the file replaced by another, larger one", () => {
    seenThenSwap((dir) => {
      rmSync(join(dir, "lib/a.ts"));
      writeFileSync(join(dir, "lib/a.ts"), "x".repeat(4096));
    });
  });
});
