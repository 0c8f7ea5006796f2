/**
 * Which of the jail's layers are active on this machine, for `tether doctor`
 * and the escape suite's report. A layer the host cannot offer says why and
 * what stands in for it.
 */
import { detectCgroups } from "./cgroup-detect.js";
import { jailIdentity } from "./identity.js";
import { nativeProgram } from "./native/compile.js";
import { PROC_MASKED_DIRS, PROC_MASKED_FILES, JAIL_TMP_BYTES, findBwrap } from "./sandbox.js";
import { seccompFilter, seccompSupport } from "./seccomp.js";
import type { JailSetup } from "./setup.js";
import { existsSync } from "node:fs";
import { jobFailure, runHostJobSync } from "./host-job.js";
import { sqliteJob } from "../store/db-processes.js";

export interface JailLayer {
  readonly name: string;
  /** False: satellites will not start (a required layer is missing). */
  readonly ok: boolean;
  readonly detail: string;
}

function attempt(name: string, run: () => string): JailLayer {
  try {
    return { name, ok: true, detail: run() };
  } catch (err) {
    return { name, ok: false, detail: (err as Error).message };
  }
}

/** The layers under `setup` (the broker's jail options; default: every default). */
export function jailLayers(setup: JailSetup = {}): JailLayer[] {
  const bwrap = findBwrap();
  const layers: JailLayer[] = [
    attempt(
      "launcher",
      () =>
        `${nativeProgram("jail-exec", setup.nativeDir)}: closes every descriptor but stdio ` +
        `before bwrap, sets no_new_privs, no core files, files ≤ ${JAIL_TMP_BYTES / 2 ** 20} MiB`,
    ),
  ];
  const identity = jailIdentity(setup.identity);
  layers.push({
    name: "jail user",
    ok: true,
    detail:
      identity === null
        ? `the broker's own uid ${process.getuid?.()} in bwrap's unprivileged user namespace (the broker is not root)`
        : `host uid ${identity.uid}, gid ${identity.gid}, no groups ` +
          `(the broker is root; TETHER_JAIL_UID/GID to change)`,
  });
  const seccomp = seccompSupport(setup.nativeDir);
  layers.push(
    seccomp.available
      ? attempt("seccomp", () => `syscall denylist compiled with libseccomp (${seccompFilter(setup.nativeDir)})`)
      : { name: "seccomp", ok: false, detail: seccomp.why ?? "unavailable" },
  );
  const cgroups = detectCgroups(setup.cgroup);
  layers.push({
    name: "cgroup",
    ok: true,
    detail:
      cgroups.kind === "none"
        ? `${cgroups.describe()} — memory is bounded by sized mounts ` +
          `and the RSS watchdog, CPU by deadlines and the idle meter`
        : cgroups.describe(),
  });
  if (bwrap !== null) layers.push(hostJobsLayer(setup));
  if (bwrap !== null) {
    const masked = [...PROC_MASKED_FILES, ...PROC_MASKED_DIRS].filter((e) => existsSync(`/proc/${e}`));
    layers.push({
      name: "mounts",
      ok: true,
      detail:
        `root and /dev read-only, /tmp ${JAIL_TMP_BYTES / 2 ** 20} MiB, ` +
        `/proc/sys read-only, ${masked.length} /proc entries masked, no /sys`,
    });
  }
  return layers;
}

/**
 * The host-side jails (jail/host-job.ts): what runs in them, with the same layers as a
 * satellite — proven by running one (the database script, with nothing to do) here.
 */
function hostJobsLayer(setup: JailSetup): JailLayer {
  const kinds =
    "bundling (Node, esbuild), the type check (Deno), database processes " +
    "and migrations (Node, SQLite), the Deno cache fold (Node, SQLite)";
  try {
    const started = performance.now();
    const r = runHostJobSync(
      sqliteJob("doctor probe", [], ["fold"], JAIL_TMP_BYTES, { jail: setup }),
      "",
      30_000,
      4096,
    );
    if (r.exitCode !== 0)
      return {
        name: "host-side jails",
        ok: false,
        detail: `a jailed job does not run here: ${jobFailure({ label: "probe" }, r, 30_000)}`,
      };
    return {
      name: "host-side jails",
      ok: true,
      detail:
        `${kinds}: each in the launcher, namespaces, seccomp, cgroup and jail user above, seeing ` +
        `only its own files (a jailed Node started in ${Math.round(performance.now() - started)} ms)`,
    };
  } catch (err) {
    return { name: "host-side jails", ok: false, detail: `a jailed job cannot start: ${(err as Error).message}` };
  }
}
