/**
 * `tether install <dir>`: the registry's install with what only the command
 * line adds — a dry boot of the bundled artifact in the jail, so a module that
 * throws while loading or serves other tools, hooks or commands than its
 * manifest declares is refused before an operator ever reviews it (the same
 * messages as `tether check`); and a question before a different folder
 * replaces an extension installed under the same name.
 *
 * No type check here: `deno check` takes seconds (4–20 s measured, see
 * docs/authors.md), types are stripped by the bundle, and what would break at
 * run time is what the dry boot catches. `tether check` type-checks.
 */
import type { Broker } from "../broker.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { dryBoot } from "../install/dry-boot.js";
import { jailSetup } from "../jail/setup.js";
import { InstallDeclined } from "../registry/registry.js";
import type { EnvironmentOptions } from "./environment.js";
import type { EXIT } from "./command.js";

export interface InstallContext {
  readonly json: boolean;
  /** --yes: replace a same-named install from another folder without asking. */
  readonly yes: boolean;
  readonly options: EnvironmentOptions;
  readonly confirm: (question: string) => Promise<boolean>;
}

/** Installs `dir` and prints the result; the exit's name. TetherErrors are the caller's to print. */
export async function runInstall(broker: Broker, dir: string, ctx: InstallContext): Promise<keyof typeof EXIT> {
  const progress = (line: string) => {
    if (!ctx.json) process.stderr.write(`… ${line}\n`);
  };
  const jail = jailSetup(ctx.options);
  try {
    const { installed, status, collected } = await broker.registry.install(dir, progress, {
      replaceFrom: async (current, source) => {
        const warning =
          `'${current.name}' is installed from ${current.sourceDir}; ${source} is another ` +
          `folder: installing it replaces that install (and its approval stops covering it)`;
        if (ctx.yes) {
          process.stderr.write(`… warning: ${warning}\n`);
          return true;
        }
        process.stderr.write(`warning: ${warning}\n`);
        return ctx.confirm(`Replace ${current.name} with ${source}?`);
      },
      verify: async (artifact, manifest, source) => {
        progress(`booting ${manifest.name} once in the jail (a dry boot: what it serves against what it declares)`);
        const boot = await dryBoot(artifact, manifest, source, {
          jail,
          ...(ctx.options.sandbox !== undefined ? { sandbox: ctx.options.sandbox } : {}),
        });
        if (!boot.ok) {
          throw new TetherError(
            BrokerCode.installFailed,
            `${manifest.name} is not installed: ${boot.problems.join("; ")}. ` +
              `Run: tether check ${dir} for the whole report`,
          );
        }
      },
    });
    for (const name of collected.artifacts) progress(`removed ${name}: no install refers to it any more`);
    const value = {
      name: installed.name,
      version: installed.version,
      status,
      manifestHash: installed.manifestHash,
      artifactHash: installed.artifactHash,
    };
    const next = `\nNext: tether review ${installed.name}, then tether approve ${installed.name}`;
    const text = `installed ${installed.name} ${installed.version}: ${status}${status === "approved" ? "" : next}`;
    console.log(ctx.json ? JSON.stringify(value, null, 2) : text);
    return "ok";
  } catch (err) {
    if (!(err instanceof InstallDeclined)) throw err;
    console.error(
      process.stdin.isTTY || ctx.yes
        ? `not installed: ${err.message}`
        : `not installed: ${err.message}; no terminal to confirm on: pass --yes to replace it from a script`,
    );
    return "declined";
  }
}
