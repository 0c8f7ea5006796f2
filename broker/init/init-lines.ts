/**
 * What the commands say about initializers (`[init]`): `tether approve`'s
 * line after it ran one, `tether serve`'s at startup, `tether status`'s state.
 */
import type { KernelHost } from "../kernel/host.js";
import type { Installed } from "../registry/registry.js";
import { InitRecords } from "../store/init-records.js";
import type { InitReport } from "./initializers.js";

/** What running the pending initializers needs: the kernel, and the initializers' feature. */
export interface InitHost extends Pick<KernelHost, "store" | "registry" | "closed" | "approved"> {
  initialize(name: string, reason: "approved" | "start"): Promise<InitReport>;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** One line for `tether approve <name>`: how the init went (the approval stands either way). */
export function initLine(name: string, report: InitReport): string {
  if (!report.ok)
    return (
      `init failed: ${report.error ?? ""}; '${name}' stays inactive ` +
      `until it succeeds (it runs again at the next start of a broker)`
    );
  const message = report.message !== undefined ? `: ${report.message}` : "";
  return report.ran ? `init: ran in ${seconds(report.ms)}${message}` : `init: already done for this version${message}`;
}

/**
 * Runs the initializers of approved extensions whose approved version has not
 * run it yet (`tether serve` at startup), one line each to `write`.
 */
export async function runPendingInits(broker: InitHost, write: (line: string) => void): Promise<void> {
  const records = new InitRecords(broker.store);
  for (const installed of broker.registry.list()) {
    if (installed.manifest.init === undefined || broker.closed) continue;
    let approval;
    try {
      ({ approval } = broker.approved(installed.name));
    } catch {
      continue; // Not approved (or changed since): nothing to initialize.
    }
    if (
      records.get({
        extension: installed.name,
        artifactHash: approval.artifactHash,
        manifestHash: approval.manifestHash,
      })?.ranAt != null
    )
      continue;
    try {
      const report = await broker.initialize(installed.name, "start");
      write(
        `${installed.name}: ` +
          (report.ok
            ? initLine(installed.name, report)
            : `init failed: ${report.error ?? ""}; it stays inactive until it succeeds ` +
              "(it runs again at the next start of a broker)"),
      );
    } catch (err) {
      write(`${installed.name}: init not run: ${(err as Error).message}`);
    }
  }
}

/**
 * `tether status`'s state of `installed`'s init, for the
 * approval in force (else the install): null without `[init]`.
 */
export function initState(broker: Pick<KernelHost, "store" | "registry">, installed: Installed): string | null {
  if (installed.manifest.init === undefined) return null;
  const approval = broker.registry.latestApproval(installed.name);
  const pinned = approval !== null && approval.revokedAt === null ? approval : installed;
  const record = new InitRecords(broker.store).get({
    extension: installed.name,
    artifactHash: pinned.artifactHash,
    manifestHash: pinned.manifestHash,
  });
  if (record?.ranAt != null)
    return (
      `init: done for ${record.version} ` +
      `at ${new Date(record.ranAt).toISOString().replace("T", " ").slice(0, 19)} UTC`
    );
  if (record?.error != null) return `init failed: ${record.error}`;
  return "init: not run yet";
}
