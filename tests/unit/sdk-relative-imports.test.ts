/**
 * The bundler answers an SDK file's relative imports itself (sdkRelativeFile) instead of
 * asking esbuild's service each time. Held to esbuild's own resolver as the oracle: every
 * relative import the SDK makes resolves to the file esbuild would pick, and nothing the
 * shortcut answers is outside the SDK or anything but a regular file.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as esbuild from "esbuild";
import { runtimeRoot, sdkRelativeFile } from "../../broker/install/bundle-core.js";

interface Import {
  readonly importer: string;
  readonly spec: string;
}

/** Where esbuild's resolver sends each import (real path), or null when it cannot resolve it. */
async function esbuildResolves(imports: readonly Import[]): Promise<(string | null)[]> {
  const answers: (string | null)[] = [];
  await esbuild.build({
    entryPoints: ["oracle"],
    write: false,
    bundle: true,
    logLevel: "silent",
    plugins: [
      {
        name: "oracle",
        setup(build) {
          build.onResolve({ filter: /^oracle$/ }, async () => {
            for (const { importer, spec } of imports) {
              const found = await build.resolve(spec, {
                kind: "import-statement",
                importer,
                resolveDir: dirname(importer),
              });
              answers.push(found.errors.length === 0 && found.path !== "" ? realpathSync(found.path) : null);
            }
            return { path: "oracle", namespace: "oracle" };
          });
          build.onLoad({ filter: /.*/, namespace: "oracle" }, () => ({ contents: "", loader: "js" }));
        },
      },
    ],
  });
  return answers;
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

const SPECIFIER = /(?:from|import)\s*\(?\s*"([^"]+)"/g;

describe("the SDK's relative imports, resolved without esbuild", () => {
  it("go where esbuild's resolver sends every one of them", async () => {
    const sdk = realpathSync(runtimeRoot());
    const imports: Import[] = [];
    for (const file of sourcesUnder(sdk))
      for (const [, spec] of readFileSync(file, "utf8").matchAll(SPECIFIER))
        if (spec!.startsWith("./") || spec!.startsWith("../")) imports.push({ importer: file, spec: spec! });
    expect(imports.length).toBeGreaterThan(50);
    const oracle = await esbuildResolves(imports);
    const rows = imports.map(({ importer, spec }, i) => ({
      importer,
      spec,
      ours: sdkRelativeFile(sdk, dirname(importer), spec) ?? null,
      esbuild: oracle[i] ?? null,
    }));
    // Answered: exactly esbuild's file. Not answered: only what esbuild sends out of the SDK
    // (the test kit's imports of the broker; the kit is never bundled).
    const differ = rows.filter((r) =>
      r.ours !== null ? r.ours !== r.esbuild : r.esbuild !== null && r.esbuild.startsWith(`${sdk}/`),
    );
    expect(rows.filter((r) => r.ours !== null).length).toBeGreaterThan(50);
    expect(differ).toEqual([]);
  });

  describe("a made-up SDK, each spelling against esbuild", () => {
    let root: string;
    let sdk: string;
    beforeAll(() => {
      root = realpathSync(mkdtempSync(join(tmpdir(), "tether-sdk-rel-")));
      sdk = join(root, "sdk");
      mkdirSync(join(sdk, "cap", "folder"), { recursive: true });
      writeFileSync(join(root, "outside.ts"), "export const host = 1;\n");
      writeFileSync(join(sdk, "cap", "both.js"), "export const js = 1;\n");
      writeFileSync(join(sdk, "cap", "both.ts"), "export const ts = 1;\n");
      writeFileSync(join(sdk, "cap", "only.ts"), "export const ts = 1;\n");
      writeFileSync(join(sdk, "cap", "plain.mjs"), "export const m = 1;\n");
      writeFileSync(join(sdk, "cap", "folder", "index.ts"), "export const i = 1;\n");
      writeFileSync(join(sdk, "wire.ts"), "export const w = 1;\n");
      symlinkSync(join(root, "outside.ts"), join(sdk, "cap", "leak.ts"));
      symlinkSync(join(sdk, "wire.ts"), join(sdk, "cap", "inner.ts"));
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    const cases: ReadonlyArray<[string, "inside" | "esbuild's business"]> = [
      ["./both.js", "inside"],
      ["./only.js", "inside"],
      ["./only.ts", "inside"],
      ["./plain.mjs", "inside"],
      ["../wire.js", "inside"],
      ["./inner.js", "inside"],
      ["./leak.js", "esbuild's business"],
      ["../../outside.js", "esbuild's business"],
      ["./folder", "esbuild's business"],
      ["./folder/", "esbuild's business"],
      ["./missing.js", "esbuild's business"],
      ["./only", "esbuild's business"],
      ["only.js", "esbuild's business"],
      ["/etc/passwd", "esbuild's business"],
      ["node:fs", "esbuild's business"],
    ];
    it.each(cases)("%s: %s", async (spec, expected) => {
      const importer = join(sdk, "cap", "mod.ts");
      const ours = sdkRelativeFile(sdk, dirname(importer), spec);
      if (expected === "esbuild's business") {
        expect(ours).toBeUndefined();
        return;
      }
      expect(ours).toBeDefined();
      expect(ours!.startsWith(`${sdk}/`)).toBe(true);
      expect([ours]).toEqual(await esbuildResolves([{ importer, spec }]));
    });
  });
});
