/**
 * The OS layer alone: a script run by a Deno with `--allow-all` inside the
 * exact jail a satellite gets (launcher, bwrap, seccomp, cgroup), as a Deno
 * permission bypass would leave an attacker. It prints one JSON line.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { satelliteLimits } from "../../../broker/jail/cgroup-limits.js";
import { createSatelliteCgroup } from "../../../broker/jail/cgroup.js";
import { denoBinary } from "../../../broker/jail/deno-binary.js";
import { jailIdentity, makeSatelliteDir } from "../../../broker/jail/identity.js";
import { JAIL_ARTIFACT, JAIL_DENO, launchCommand } from "../../../broker/jail/sandbox.js";
import { seccompFilter } from "../../../broker/jail/seccomp.js";
import { spawnJailed } from "../../../broker/jail/spawn.js";
import { envJail } from "../../support/env-options.js";

export async function runWithOsLayerOnly(script: string): Promise<unknown> {
  // A folder the jail's uid can reach (see broker/jail/identity.ts).
  const jail = envJail();
  const identity = jailIdentity(jail.identity);
  const dir = makeSatelliteDir(identity);
  const cgroup = createSatelliteCgroup("os-layer", satelliteLimits(64), jail.cgroup);
  try {
    const probe = join(dir, "probe.js");
    writeFileSync(join(dir, "s.sock"), ""); // the jail binds the socket file itself
    writeFileSync(probe, script);
    // Deno 2.9 wants --allow-all for /proc/sys on top of the write grant: drop its checks altogether.
    const payload = [JAIL_DENO, "run", "--allow-all", "--no-config", JAIL_ARTIFACT];
    const launch = launchCommand({
      sandbox: "bwrap",
      deno: denoBinary(jail.deno),
      nativeDir: jail.nativeDir,
      identity,
      artifact: probe,
      socketDir: dir,
      memoryMb: 64,
      payload,
      seccomp: seccompFilter(jail.nativeDir),
      cgroupProcs: cgroup?.procsFiles ?? [],
    });
    const child = spawnJailed(launch);
    child.stdin?.on("error", () => {});
    child.stdin?.end();
    const [out, err] = await Promise.all([
      new Response(child.stdout as never).text(),
      new Response(child.stderr as never).text(),
    ]);
    await child.exited;
    const last = out.trim().split("\n").pop();
    if (!last) throw new Error(`the OS-layer probe printed nothing; stderr: ${err.slice(-2000)}`);
    return JSON.parse(last);
  } finally {
    await cgroup?.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
