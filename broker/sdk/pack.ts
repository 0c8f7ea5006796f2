/**
 * `npm pack` of the SDK: the two tarballs a registry would publish, built
 * from a staged copy (stage.ts) so nothing is written into the checkout.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { stageSdk } from "./stage.js";

function npmPack(dir: string, out: string): Promise<string> {
  return new Promise((done, fail) => {
    execFile(
      "npm",
      ["pack", "--json", "--pack-destination", out],
      { cwd: dir, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        if (err !== null) {
          fail(new Error(`npm pack in ${dir} failed: ${stderr.trim() || err.message}`));
          return;
        }
        const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
        done(join(out, packed!.filename));
      },
    );
  });
}

/** Packs `@tether/ext` and `@tether/cap` into `out`; answers the two tarballs' paths. */
export async function packSdk(out: string): Promise<{ ext: string; cap: string }> {
  const dest = resolve(out);
  mkdirSync(dest, { recursive: true });
  const stage = mkdtempSync(join(tmpdir(), "tether-sdk-stage-"));
  try {
    const staged = await stageSdk(stage);
    return { ext: await npmPack(staged.ext, dest), cap: await npmPack(staged.cap, dest) };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
