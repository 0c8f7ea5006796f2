/**
 * Makes the satellite slot of one approved extension in one session: the
 * artifact checked against the approval (missing or modified on disk is
 * refused, naming the command that fixes it), the jail spec from the
 * approval's limits and the broker's options, the audit rows for refusals and
 * bound stops, and the per-artifact Deno cache.
 */
import { declaredOf } from "./install/declared.js";
import { satellitesOf, type PoolLimits } from "./install/manifest.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { RefusalAudit } from "./caps/refusal-audit.js";
import { BrokerCode, TetherError } from "./base/errors.js";
import { denoBinary } from "./jail/deno-binary.js";
import { denoCacheFor, type DenoCacheMount, type DenoCacheSource } from "./jail/deno-cache.js";
import { jailIdentity } from "./jail/identity.js";
import { resolveSandbox, type SandboxMode } from "./jail/sandbox.js";
import type { JailSetup } from "./jail/setup.js";
import type { Logger } from "./base/log.js";
import { sha256, type Approval, type Installed } from "./registry/registry.js";
import { SatelliteProcess } from "./satellite/process.js";
import type { AddedKinds } from "./satellite/answer.js";
import type { SatelliteSpec } from "./satellite/spec.js";
import { SatelliteSlot } from "./satellite/slot.js";
import { SatellitePool } from "./satellite/pool.js";
import type { OperatorPolicy } from "./caps/policy.js";
import type { Ledger } from "./store/ledger.js";

export interface LauncherOptions {
  readonly home: string;
  readonly sandbox?: SandboxMode;
  readonly jail: JailSetup;
  readonly log: Logger;
  readonly ledger: Ledger;
  /** The kinds added beside the built-ins: their answers are checked against their schemas. */
  readonly kinds?: AddedKinds;
  readonly bootTimeoutMs?: number;
  readonly graceMs?: number;
  readonly ladderStepMs?: number;
  /** Reuse Deno's caches per approved artifact (default true). */
  readonly denoCache?: boolean;
}

export class SatelliteLauncher {
  readonly #options: LauncherOptions;
  /** Deno cache warm-ups in flight, by cache folder (one boot warms each). */
  readonly #warming = new Map<string, Promise<DenoCacheMount | null>>();

  constructor(options: LauncherOptions) {
    this.#options = options;
  }

  /**
   * The satellites of `installed` in `session`, under `approval`: a pool of
   * `[limits] concurrency`, under the operator's ceilings (see poolSize).
   * Throws a TetherError when the artifact is not the approved one.
   */
  pool(session: string, installed: Installed, approval: Approval, operator: OperatorPolicy | Error): SatellitePool {
    const limits = approval.grants.limits;
    const size = poolSize(limits, operator);
    const make = this.#slotMaker(session, installed, approval, Math.ceil(limits.concurrency / size));
    return new SatellitePool(installed.manifest.name, size, make, limits.concurrency);
  }

  /** Checks the artifact once, then makes slots of it (one per satellite of the pool). */
  #slotMaker(session: string, installed: Installed, approval: Approval, capacity: number): () => SatelliteSlot {
    const name = installed.manifest.name;
    let code: string;
    try {
      code = readFileSync(installed.artifactPath, "utf8");
    } catch {
      throw new TetherError(
        BrokerCode.notApproved,
        `The artifact of '${name}' is missing (${installed.artifactPath}). Run: tether install ${installed.sourceDir}`,
      );
    }
    if (sha256(code) !== approval.artifactHash) {
      throw new TetherError(
        BrokerCode.notApproved,
        `The artifact of '${name}' was modified on disk since it was approved. Run: tether ` +
          `install ${installed.sourceDir}, then tether review ${name}`,
      );
    }
    const o = this.#options;
    const limits = approval.grants.limits;
    const spec: SatelliteSpec = {
      name,
      artifact: installed.artifactPath,
      declared: declaredOf(installed.manifest),
      ...(o.kinds !== undefined ? { kinds: o.kinds } : {}),
      sandbox: resolveSandbox(o.sandbox),
      jail: o.jail,
      memoryMb: limits.memory_mb,
      bootTimeoutMs: o.bootTimeoutMs ?? 10_000,
      graceMs: o.graceMs ?? 500,
      ladderStepMs: o.ladderStepMs ?? 2_000,
      log: o.log,
      // A call's start is journaled before its frame goes out (the starts held so far in one write).
      beforeSend: () => o.ledger.writeStarts(),
    };
    return () => {
      // Per satellite: the allowance of refusal rows is each process's.
      const refusals = new RefusalAudit((row) => o.ledger.audit(row));
      return new SatelliteSlot({
        idleMs: limits.idle_s * 1000,
        capacity,
        // A capability call outside an open invocation is refused before any handler: audit it too
        // (aggregated past an allowance; the satellite is replaced past its own, see process.ts).
        observeRefusals: (cap) =>
          refusals.record({
            invocationId: null,
            sessionId: session,
            extension: name,
            capability: cap.cap.slice(0, 256),
            target: "",
            decision: "denied",
            rule: "token",
            bytes: 0,
          }),
        spec: {
          ...spec,
          // A stop for a bound is a decision about the extension: the audit keeps it beside its capability calls.
          onBoundStop: (bound, detail) =>
            o.ledger.audit({
              invocationId: null,
              sessionId: session,
              extension: name,
              capability: `jail.${bound}`,
              target: detail.slice(0, 256),
              decision: "denied",
              rule: `${bound}_bound`,
              bytes: 0,
            }),
          ...(spec.sandbox === "bwrap" && o.denoCache !== false
            ? { denoCache: this.#denoCache(installed.artifactHash, spec) }
            : {}),
        },
      });
    };
  }

  /** The approved artifact's Deno cache: warmed by one complete boot the first time, read-only after. */
  #denoCache(artifactHash: string, spec: SatelliteSpec): DenoCacheSource {
    const jail = this.#options.jail;
    return denoCacheFor(
      join(this.#options.home, "cache", "deno"),
      artifactHash,
      denoBinary(jail.deno),
      async (mount) => {
        const warm = await SatelliteProcess.boot({ ...spec, denoCache: mount });
        // A clean exit (stdin EOF) lets Deno write what it caches at the end.
        await warm.close();
      },
      jailIdentity(jail.identity),
      this.#warming,
      { jail, ...(this.#options.sandbox !== undefined ? { sandbox: this.#options.sandbox } : {}) },
    );
  }
}

/**
 * How many satellites one session may run of an extension: what it asked
 * (`[limits] satellites`, default 1, at most its `concurrency`), at most the
 * operator's `max_concurrency`, and no more than fit in `max_pool_memory_mb`
 * at its `memory_mb` each — never fewer than one. A broken policy file allows
 * one. The calls it may have open (`concurrency`) are shared among them.
 */
export function poolSize(limits: PoolLimits, operator: OperatorPolicy | Error): number {
  if (operator instanceof Error) return 1;
  const fit = Math.floor(operator.maxPoolMemoryMb / limits.memory_mb);
  return Math.max(1, Math.min(satellitesOf(limits), operator.maxConcurrency, fit));
}
