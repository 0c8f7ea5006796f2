/**
 * The scripted fake satellite as an installed extension (`fake`), beside the
 * well-behaved hook-bus worker (`worker`, tool `run`). An installed artifact
 * boots through the prelude, which holds the socket before the module runs, so
 * a raw-frame fake cannot speak through it: the install gets the raw `serve`
 * artifact (fixtures/fake-satellites, bundled alone) in place of its bundle,
 * and the store's hash is set to match, as a reinstall would.
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as esbuild from "esbuild";
import type { Broker } from "../../../broker/broker.js";
import { ARTIFACT_BUILD_OPTIONS } from "../../../broker/install/bundle.js";
import { REPO } from "../../support/satellites.js";

export const FAKE_DIR = join(REPO, "tests/integration/fixtures/fake-satellites");
export const WORKER_DIR = join(REPO, "tests/integration/fixtures/bus/worker");

/** The artifact that plays `script` (`await play("<script>")`), bundled the way every artifact is, without the SDK. */
export async function buildFakeArtifact(script: string): Promise<string> {
  const built = await esbuild.build({
    ...ARTIFACT_BUILD_OPTIONS,
    stdin: {
      contents: `import { play } from "./scripts.ts";\nawait play(${JSON.stringify(script)});\n`,
      resolveDir: FAKE_DIR,
      sourcefile: `${script}.ts`,
      loader: "ts",
    },
    absWorkingDir: FAKE_DIR,
  });
  return built.outputFiles[0]!.text;
}

/** Installs and approves `worker` and `fake`, the fake's artifact swapped for `serveCode` (the raw `serve` script). */
export async function installFakeAndWorker(broker: Broker, serveCode: string): Promise<void> {
  for (const dir of [WORKER_DIR, FAKE_DIR]) {
    const { installed } = await broker.registry.install(dir);
    if (dir === FAKE_DIR) {
      writeFileSync(installed.artifactPath, serveCode);
      broker.store.sqlite
        .prepare("update installs set artifact_hash = ? where name = ?")
        .run(createHash("sha256").update(serveCode).digest("hex"), installed.manifest.name);
    }
    broker.registry.approve(installed.manifest.name);
  }
}

/** The raw `serve` artifact already built into `dir` (as fake-satellites.test.ts does). */
export function readServeArtifact(dir: string): string {
  return readFileSync(join(dir, "serve.js"), "utf8");
}
