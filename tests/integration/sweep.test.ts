/**
 * A broker killed with SIGKILL removes nothing: its satellites' socket folders
 * (and cgroups, see cgroup.test.ts) stay. The next broker sweeps them — only
 * those whose broker is gone.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { makeSatelliteDir, sweepSatelliteDirs } from "../../broker/jail/identity.js";
import { envJailIdentity } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";

test("the socket folders of a broker killed with SIGKILL are swept by the next one; a live broker's are not", async () => {
  const child = spawn("node", ["--import", "tsx", "tests/integration/support/killed-broker.ts"], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d.toString();
      if (out.includes("\n")) resolve(out.split("\n")[0]!);
    });
    child.on("exit", (code) => reject(new Error(`the broker exited ${code} before it was killed`)));
  });
  const { ok, dir } = JSON.parse(line) as { ok: boolean; dir: string };
  expect(ok).toBe(true);
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
  // Killed: nothing removed its folder.
  expect(existsSync(dir)).toBe(true);
  // This process's own folder (a live broker's) stays.
  const ours = makeSatelliteDir(envJailIdentity());
  try {
    const swept = sweepSatelliteDirs(envJailIdentity());
    expect(swept).toContain(dir);
    expect(existsSync(dir)).toBe(false);
    expect(swept).not.toContain(ours);
    expect(existsSync(ours)).toBe(true);
  } finally {
    rmSync(ours, { recursive: true, force: true });
  }
});

test("only folders of the satellite kind are swept: a file by such a name stays", () => {
  const probe = makeSatelliteDir(envJailIdentity());
  const parent = dirname(probe);
  rmSync(probe, { recursive: true });
  // pid 999999999 is above any pid_max: its broker is gone.
  const dead = join(parent, "tether-sat-999999999-folder");
  const file = join(parent, "tether-sat-999999999-file");
  mkdirSync(dead);
  writeFileSync(file, "not a satellite's");
  try {
    const swept = sweepSatelliteDirs(envJailIdentity());
    expect(swept).toContain(dead);
    expect(swept).not.toContain(file);
    expect(existsSync(file)).toBe(true);
  } finally {
    rmSync(file, { force: true });
    rmSync(dead, { recursive: true, force: true });
  }
});
