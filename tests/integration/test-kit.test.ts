/**
 * The SDK test kit's own Deno tests (tests/kit/kit_test.ts): `FakeDb` against
 * the broker's allowlist and wording, its migrations folder, `kit.init` and
 * `kit.service`, `FakeKv`'s `kv.cas`, `FakeModel`'s charge — type-checked and run with `deno test` through
 * manifests/deno.json's import map, reading only that folder, nothing fetched.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { REPO } from "../support/satellites.js";

const KIT_TESTS = join(REPO, "tests", "kit");

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tether-kit-tests-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("deno test passes over the test kit's own tests, offline", async () => {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: home,
    DENO_DIR: join(home, "deno-dir"),
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
  };
  const args = [
    "test",
    "--no-remote",
    "--config",
    join(REPO, "manifests", "deno.json"),
    `--allow-read=${KIT_TESTS}`,
    "kit_test.ts",
  ];
  const { code, output } = await new Promise<{ code: number; output: string }>((done) => {
    execFile(denoBinary(), args, { cwd: KIT_TESTS, env, maxBuffer: 16 * 2 ** 20 }, (err, stdout, stderr) => {
      done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, output: `${stdout}${stderr}` });
    });
  });
  if (code !== 0) throw new Error(`deno test failed (exit ${code}):\n${output}`);
  expect(output).toMatch(/ok \| 8 passed \| 0 failed/);
}, 180_000);
