/**
 * How satellites are jailed on this host, as the broker was told (its options):
 * every field absent takes the default an embedder expects — the `deno`
 * package's binary, the default jail uid and root under a root broker, cgroups
 * detected, the launcher compiled into build/native. Nothing here is read from
 * the environment; the `tether` command fills it from its own (broker/cli/environment.ts).
 */
import type { CgroupMode } from "./cgroup-detect.js";
import type { JailIdentityOptions } from "./identity.js";

export interface JailSetup {
  /** The Deno binary; default the one the `deno` npm package ships. */
  readonly deno?: string;
  /** Who a root broker's jail runs as, and its root folder (see identity.ts). */
  readonly identity?: JailIdentityOptions;
  /** Which cgroups bound each satellite (see cgroup.ts); default auto. */
  readonly cgroup?: CgroupMode;
  /** Where the launcher and the seccomp filter are compiled; default build/native in the checkout. */
  readonly nativeDir?: string;
}

/** The flat options a broker takes for its jail (BrokerOptions extends these). */
export interface JailOptions {
  /** The Deno binary satellites run on; default the one the `deno` npm package ships. */
  readonly deno?: string;
  /** The host uid satellites run as when the broker is root; default DEFAULT_JAIL_UID (see identity.ts). */
  readonly jailUid?: number;
  /** The host gid satellites run as when the broker is root; default the jail uid. */
  readonly jailGid?: number;
  /** Where a root broker keeps what the jail uid must reach; default DEFAULT_JAIL_ROOT. */
  readonly jailRoot?: string;
  /** Which cgroups bound each satellite: auto (default), v1, v2 or none. */
  readonly cgroup?: CgroupMode;
  /** Where the jail launcher and seccomp filter are compiled; default build/native in the checkout. */
  readonly nativeDir?: string;
}

/** The setup those options describe (absent ones stay absent: each takes its default where it is used). */
export function jailSetup(options: JailOptions): JailSetup {
  return {
    ...(options.deno !== undefined ? { deno: options.deno } : {}),
    identity: {
      ...(options.jailUid !== undefined ? { uid: options.jailUid } : {}),
      ...(options.jailGid !== undefined ? { gid: options.jailGid } : {}),
      ...(options.jailRoot !== undefined ? { root: options.jailRoot } : {}),
    },
    ...(options.cgroup !== undefined ? { cgroup: options.cgroup } : {}),
    ...(options.nativeDir !== undefined ? { nativeDir: options.nativeDir } : {}),
  };
}
