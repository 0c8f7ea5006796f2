/**
 * Install-time bundling: only the extension's own folder and the SDK resolve.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleExtension } from "../../broker/install/bundle.js";
import { readManifest } from "../../broker/install/manifest.js";
import { envBundleCache } from "../support/env-options.js";
import { TetherError } from "../../broker/base/errors.js";

let root: string;

const MANIFEST = `name = "probe"
version = "0.1.0"
description = "bundle probe"
entry = "index.ts"

[[tool]]
name = "t"
description = "t"
`;

function extension(files: Record<string, string>): string {
  const dir = join(root, `ext-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir);
  writeFileSync(join(dir, "manifest.toml"), MANIFEST);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

async function bundleError(dir: string): Promise<TetherError> {
  try {
    await bundleExtension(dir, readManifest(dir), envBundleCache());
  } catch (err) {
    expect(err).toBeInstanceOf(TetherError);
    return err as TetherError;
  }
  throw new Error("bundling succeeded but should have failed");
}

const TOOL = `import { outcome, text } from "@tether/ext";\nexport const tools = { t: () => outcome([text("ok")]) };\n`;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "tether-bundle-"));
  writeFileSync(join(root, "outside.ts"), "export const secret = 1;\n");
  writeFileSync(join(root, "outside.json"), '{"secret": 1}\n');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

test("an extension importing its own files and the SDK bundles into one artifact with a hash", async () => {
  const dir = extension({
    "index.ts": `import { x } from "./lib/x.js";\nimport data from "./data.json";\n${TOOL}export const y = x + data.n;\n`,
    "lib/x.ts": "export const x = 1;\n",
    "data.json": '{"n": 2}',
  });
  const artifact = await bundleExtension(dir, readManifest(dir), envBundleCache());
  expect(artifact.sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(artifact.code).toContain("serving");
  expect(artifact.code).not.toMatch(/from\s*["']\.\/lib/); // inlined, not left as an import
});

test.each([
  [
    "a relative import outside the folder",
    `import { secret } from "../outside.ts";\n${TOOL}export const s = secret;\n`,
    "import '../outside.ts' in index.ts reaches outside the extension folder",
  ],
  [
    "a JSON import outside the folder",
    `import data from "../outside.json" with { type: "json" };\n${TOOL}export const s = data;\n`,
    "import '../outside.json' in index.ts reaches outside the extension folder",
  ],
  [
    "a text import of a host file",
    `import data from "/etc/passwd" with { type: "text" };\n${TOOL}export const s = data;\n`,
    "import '/etc/passwd' in index.ts reaches outside the extension folder",
  ],
  [
    "a bare package import",
    `import _ from "lodash";\n${TOOL}export const s = _;\n`,
    "import 'lodash' in index.ts is not allowed",
  ],
  [
    "a node: builtin",
    `import { readFileSync } from "node:fs";\n${TOOL}export const s = readFileSync;\n`,
    "import 'node:fs' in index.ts is not allowed",
  ],
  [
    "a remote URL",
    `import x from "https://example.com/x.js";\n${TOOL}export const s = x;\n`,
    "import 'https://example.com/x.js' in index.ts is not allowed",
  ],
  [
    "a literal dynamic npm: import",
    `${TOOL}export const s = () => import("npm:left-pad");\n`,
    "import 'npm:left-pad' in index.ts is not allowed",
  ],
])("%s is an install error naming the import", async (_what, source, message) => {
  const err = await bundleError(extension({ "index.ts": source }));
  expect(err.code).toBe("install_failed");
  expect(err.message).toContain(message);
});

test("a symlink inside the folder that points outside is refused", async () => {
  const dir = extension({ "index.ts": `import { secret } from "./link.ts";\n${TOOL}export const s = secret;\n` });
  symlinkSync(join(root, "outside.ts"), join(dir, "link.ts"));
  const err = await bundleError(dir);
  expect(err.message).toContain("import './link.ts' in index.ts reaches outside the extension folder");
});

test("an entry outside the folder is refused", async () => {
  const dir = extension({});
  writeFileSync(join(dir, "manifest.toml"), MANIFEST.replace('entry = "index.ts"', 'entry = "../outside.ts"'));
  await expect(bundleExtension(dir, readManifest(dir), envBundleCache())).rejects.toThrow(
    "entry '../outside.ts' is outside the extension folder",
  );
});

test("a syntax error is an install error naming the file and line", async () => {
  const err = await bundleError(extension({ "index.ts": `${TOOL}\nexport const broken = ;\n` }));
  expect(err.message).toMatch(/index\.ts:4: /);
});
