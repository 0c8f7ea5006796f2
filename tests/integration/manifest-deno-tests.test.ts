/**
 * The example extensions' own tests: `deno test` over manifests/ (each
 * extension's `index_test.ts`, written with the SDK's test kit), type-checked
 * and run through manifests/deno.json, with nothing fetched. Each tool, hook
 * and command a manifest declares is named in its extension's test file
 * (a provider, as a `kit.complete("<name>"` call).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { readManifest } from "../../broker/install/manifest.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const MANIFESTS = join(REPO, "manifests");
const EXTENSIONS = readdirSync(MANIFESTS).filter((name) => existsSync(join(MANIFESTS, name, "manifest.toml")));

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tether-manifest-tests-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

test.each(EXTENSIONS)(
  "manifests/%s has a test file naming every tool, hook, command, loader, route, strategy and provider it declares",
  (name) => {
    const manifest = readManifest(join(MANIFESTS, name));
    const tests = readFileSync(join(MANIFESTS, name, "index_test.ts"), "utf8");
    const declared = [
      ...manifest.tool.map((t) => t.name),
      ...manifest.hook.map((h) => h.event),
      ...manifest.command.map((c) => c.name),
      ...[...manifest.context, ...manifest.route, ...manifest.compaction].map((row) => row.name),
      // A provider's tests ask it for a completion, by name.
      ...manifest.provider.flatMap((row) => [`kit.complete("${row.name}"`]),
      // A managed extension's tests prepare and close it; an observer's tell it events.
      ...(manifest.managed !== undefined ? ["kit.prepare(", "kit.close("] : []),
      ...(manifest.observe !== undefined ? ["kit.observe("] : []),
    ];
    expect(declared.filter((what) => !tests.includes(what))).toEqual([]);
  },
);

test("deno test passes over every example extension, offline", async () => {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: home,
    DENO_DIR: join(home, "deno-dir"),
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
  };
  const { code, output } = await new Promise<{ code: number; output: string }>((done) => {
    execFile(
      denoBinary(),
      ["test", "--no-remote", `--allow-read=${MANIFESTS}`, "--config", join(MANIFESTS, "deno.json")],
      { cwd: MANIFESTS, env, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, output: `${stdout}${stderr}` });
      },
    );
  });
  if (code !== 0) throw new Error(`deno test failed (exit ${code}):\n${output}`);
  for (const name of EXTENSIONS) expect(output).toContain(`./${name}/index_test.ts`);
  const summary = /ok \| (\d+) passed \| 0 failed/.exec(output);
  expect(Number(summary?.[1] ?? 0)).toBeGreaterThanOrEqual(EXTENSIONS.length * 2);
}, 180_000);
