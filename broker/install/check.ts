/**
 * Checking an extension folder (`tether check`), as a library: everything
 * `tether install` refuses — the manifest, the bundle and its confinement, and
 * what the dry boot shows (a module that throws while loading, tools, hooks
 * and commands served but not declared or declared but not served) — plus a
 * type check, all reported together, each problem saying what to change.
 *
 * Later stages need earlier ones: no bundle without a manifest, and no type
 * check or boot without a bundle (the bundle is what confines the sources'
 * imports to the folder). The type check and the boot run side by side.
 */
import { MIGRATIONS_DIR } from "./migrations.js";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { preloadAjv } from "../base/ajv.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { bundleExtension, type Artifact } from "./bundle.js";
import { dryBoot, type DryBootOptions } from "./dry-boot.js";
import { parseManifest, readManifestFile, type Manifest } from "./manifest.js";
import { manifestProblems } from "./manifest-checks.js";
import { typeCheck, type TypeCheckOptions } from "./type-check.js";
import type { Reach } from "../egress/reach.js";
import { reachWarnings } from "../egress/rule-reach.js";

export const STAGES = ["manifest", "bundle", "types", "boot"] as const;
export type Stage = (typeof STAGES)[number];

export interface StageReport {
  readonly stage: Stage;
  /** "skipped": an earlier stage failed, or it was not asked for. */
  readonly result: "ok" | "failed" | "skipped";
  /** One line: what passed, or why it was skipped. */
  readonly summary: string;
  /** What to change, one line each (file:line first where known). */
  readonly problems: readonly string[];
}

export interface CheckReport {
  readonly folder: string;
  readonly name: string | null;
  readonly version: string | null;
  readonly ok: boolean;
  readonly stages: readonly StageReport[];
  /**
   * What review will tell the operator that no stage refuses: each `[net]` rule
   * the operator's policy leaves unreachable (every call to it refused), with
   * the switch it needs, as `tether review` words it.
   */
  readonly warnings: readonly string[];
}

export interface CheckOptions extends DryBootOptions {
  /**
   * How long `deno check` may take; false: no type check (the
   * stage is skipped). It runs in the same jail setup as the boot.
   */
  readonly types: Pick<TypeCheckOptions, "timeoutMs"> | false;
  readonly progress?: (line: string) => void;
  /** Where bundles are kept to be reused (HostJobSetup's `bundleCache`). */
  readonly bundleCache?: string | false;
  /** The operator's policy.toml the rules are read against (as review reads it); none: no warnings. */
  readonly policy?: { readonly reach: Reach | Error; readonly file: string };
}

/** The review's reach warnings for `rules`, one line each (a policy that does not parse is one line). */
export function policyWarnings(rules: readonly string[], policy: CheckOptions["policy"]): string[] {
  if (policy === undefined || rules.length === 0) return [];
  if (policy.reach instanceof Error)
    return [
      `${policy.file} does not parse, so every egress call is refused until it is fixed: ${policy.reach.message}`,
    ];
  return reachWarnings(rules, policy.reach, policy.file).map(
    (w) => `${w.rule}: every call to it is refused (${w.refusal}) under ${policy.file}: ${w.fix}`,
  );
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;
const messageOf = (err: unknown) =>
  err instanceof TetherError ? err.message : `unexpected failure: ${(err as Error).message}`;

/** Checks `dir`; never throws for a problem of the extension (each is in the report). */
export async function checkExtension(dir: string, options: CheckOptions): Promise<CheckReport> {
  // The schemas are compiled below: Ajv through import() (from the command, its bundled chunk).
  await preloadAjv();
  const progress = options.progress ?? (() => {});
  const stages: StageReport[] = [];
  const skip = (stage: Stage, why: string) => stages.push({ stage, result: "skipped", summary: why, problems: [] });
  const done = (stage: Stage, problems: readonly string[], summary: string) =>
    stages.push({
      stage,
      result: problems.length === 0 ? "ok" : "failed",
      summary: problems.length === 0 ? summary : plural(problems.length, "problem"),
      problems,
    });
  let folder = dir;
  const report = (manifest: Manifest | null): CheckReport => ({
    folder,
    name: manifest?.name ?? null,
    version: manifest?.version ?? null,
    ok: stages.every((s) => s.result !== "failed"),
    stages,
    warnings: manifest === null ? [] : policyWarnings(manifest.net.allow, options.policy),
  });

  let manifest: Manifest;
  try {
    folder = realFolder(dir);
    progress(`reading ${join(folder, "manifest.toml")}`);
    manifest = parseManifest(readManifestText(folder), "manifest.toml");
  } catch (err) {
    done("manifest", [messageOf(err)], "");
    for (const stage of STAGES.slice(1)) skip(stage, "the manifest must be fixed first");
    return report(null);
  }
  const m = manifest;
  const jobSetup = {
    jail: options.jail,
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
    ...(options.bundleCache !== undefined ? { bundleCache: options.bundleCache } : {}),
  };
  done(
    "manifest",
    manifestProblems(m, "manifest.toml"),
    `${m.name} ${m.version}: ${plural(m.tool.length, "tool")}, ` +
      `${plural(m.hook.length, "hook")}, ${plural(m.command.length, "command")}`,
  );

  let artifact: Artifact;
  try {
    progress(`bundling ${m.name}@${m.version} (${m.entry})`);
    artifact = await bundleExtension(folder, m, jobSetup);
  } catch (err) {
    done("bundle", [messageOf(err)], "");
    skip("types", "the bundle must succeed first (it confines what the sources import)");
    skip("boot", "the bundle must succeed first");
    return report(m);
  }
  const migrations = artifact.sources.filter((s) => s.path.startsWith(`${MIGRATIONS_DIR}/`)).length;
  const code = artifact.sources.length - migrations;
  const shipped = migrations === 0 ? "" : `; ${plural(migrations, "migration")}, each statement within the allowlist`;
  done(
    "bundle",
    [],
    `${(artifact.code.length / 1024).toFixed(0)} KiB artifact ` +
      `from ${plural(code, "file")} of the folder, self-contained${shipped}`,
  );

  progress(
    options.types === false
      ? "booting it once in the jail"
      : `type-checking ${m.entry} and booting it once in the jail`,
  );
  const [types, boot] = await Promise.all([
    options.types === false ? null : typeCheck(folder, m, { ...options.types, ...jobSetup }),
    dryBoot(artifact, m, folder, options),
  ]);
  if (types === null) skip("types", "not asked for");
  else
    done(
      "types",
      [...types.errors.map((e) => `${e.file}:${e.line}:${e.column}: ${e.code} ${e.message}`), ...types.other],
      `no type errors (deno check ${m.entry}, ${(types.ms / 1000).toFixed(1)} s)`,
    );
  if (boot.ok) {
    const s = boot.served;
    const what = [
      `tools ${s.tools.join(", ") || "none"}`,
      s.hooks.length > 0 ? `hooks ${s.hooks.join(", ")}` : "",
      s.commands.length > 0 ? `commands ${s.commands.join(", ")}` : "",
    ];
    done(
      "boot",
      [],
      `booted in the jail in ${boot.ms} ms; serves what the manifest declares: ${what.filter(Boolean).join("; ")}`,
    );
  } else done("boot", boot.problems, "");
  return report(m);
}

function realFolder(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    throw new TetherError(
      BrokerCode.installFailed,
      `${dir}: no such folder (give the folder that holds manifest.toml)`,
    );
  }
}

function readManifestText(folder: string): string {
  return readManifestFile(join(folder, "manifest.toml"));
}
