/**
 * `tether check <folder>`: what `tether install` would refuse, plus a type
 * check, for an author before anyone installs it — every problem at once, each
 * saying what to change. Opens no store and needs no home: the dry boot runs
 * from a throwaway folder; the bundle and the type check run in host-side
 * jails over a snapshot of the folder (docs/jail.md, Host-side work).
 */
import { OperatorPolicySource } from "../caps/policy.js";
import { checkExtension, type CheckReport } from "../install/check.js";
import { resolveHome } from "../store/home.js";
import { denoBinary } from "../jail/deno-binary.js";
import { jailSetup } from "../jail/setup.js";
import type { EnvironmentOptions } from "./environment.js";
import type { EXIT } from "./command.js";

export const CHECK_USAGE = "tether check <dir>";

/** Runs the check of `args[0]` and prints the report; the exit's name. */
export async function runCheck(
  args: readonly string[],
  options: EnvironmentOptions,
  json: boolean,
): Promise<keyof typeof EXIT> {
  const dir = args[0];
  if (dir === undefined || args.length > 1) {
    const what = dir === undefined ? "missing the extension folder" : `one folder at a time, not ${args.length}`;
    console.error(`tether check: ${what}: ${CHECK_USAGE}`);
    return "usage";
  }
  const jail = jailSetup(options);
  try {
    denoBinary(jail.deno);
  } catch (err) {
    console.error(`tether check: ${(err as Error).message}`);
    return "failed";
  }
  // The rules are read against the operator's policy.toml as review will read them (a home
  // that is not there reads as the defaults: nothing non-public reachable).
  const policy = new OperatorPolicySource(resolveHome(options.home));
  const current = policy.current();
  const report = await checkExtension(dir, {
    jail,
    policy: { reach: current instanceof Error ? current : current.reach, file: policy.file },
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
    ...(options.bundleCache !== undefined ? { bundleCache: options.bundleCache } : {}),
    types: {},
    progress: (line) => {
      if (!json) process.stderr.write(`… ${line}\n`);
    },
  });
  console.log(json ? JSON.stringify(report, null, 2) : renderCheck(report, dir));
  return report.ok ? "ok" : "failed";
}

const MARK = { ok: "ok  ", failed: "FAIL", skipped: "skip" } as const;

/** The report as the author reads it: one line per stage, its problems under it, and what to do next. */
export function renderCheck(report: CheckReport, dir: string): string {
  const lines: string[] = [];
  for (const s of report.stages) {
    lines.push(`${MARK[s.result]} ${s.stage.padEnd(8)} ${s.summary}`);
    for (const p of s.problems) lines.push(`       ${p}`);
  }
  for (const w of report.warnings) lines.push(`warn policy   ${w}`);
  const who = report.name === null ? dir : `${report.name} ${report.version}`;
  const count = report.stages.reduce((n, s) => n + s.problems.length, 0);
  const typesOnly = report.stages.every((s) => s.result !== "failed" || s.stage === "types");
  lines.push(
    report.ok
      ? `${who}: no problems. Next: tether install ${dir}`
      : `${who}: ${count} ${count === 1 ? "problem" : "problems"}: ` +
          `change what each says, then run tether check ${dir} again` +
          (typesOnly ? " (tether install does not type-check, so it would accept it as it is)" : ""),
  );
  return lines.join("\n");
}
