/**
 * `tether new <name> [--dir <folder>]`: scaffolds an extension folder that
 * `deno test` passes in at once and `tether install` accepts. The SDK is laid
 * into its node_modules/ as `npm install` of the packed @tether/ext and
 * @tether/cap would lay it, built from this broker's own jail-runtime/, so
 * nothing is fetched.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import * as v from "valibot";
import { Manifest, RESERVED_NAMES } from "../install/manifest.js";
import { sdkPackages, stageSdk } from "../sdk/stage.js";
import { newExtensionFiles } from "./new-files.js";

/** main.ts's exit codes for the outcomes here. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export class NewError extends Error {}

/** A name the manifest takes, close to `name`, to suggest. */
function suggestion(name: string): string {
  const fixed = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .replace(/-+$/, "")
    .slice(0, 64);
  return fixed === "" || RESERVED_NAMES.includes(fixed) ? "my-extension" : fixed;
}

/** Why `name` cannot be an extension's name (the manifest's rule), or null. */
export function nameProblem(name: string): string | null {
  const parsed = v.safeParse(Manifest.entries.name, name);
  if (!parsed.success)
    return `'${name}' is not an extension name: ${parsed.issues[0]!.message}; try '${suggestion(name)}'`;
  if (RESERVED_NAMES.includes(name))
    return `'${name}' is reserved for a built-in extension; pick another name, e.g. '${name}-ext'`;
  return null;
}

/** Why `dir` cannot take the new extension, or null (absent, or an empty folder). */
function folderProblem(dir: string): string | null {
  let st;
  try {
    st = statSync(dir);
  } catch {
    return null;
  }
  if (!st.isDirectory()) return `${dir} exists and is not a folder; pick another folder with --dir <folder>`;
  if (readdirSync(dir).length > 0)
    return `${dir} already exists and is not empty; pick another folder with --dir <folder>, or empty this one`;
  return null;
}

/**
 * Writes the extension `name` into `dir` (default `./<name>`) and lays the
 * SDK into its node_modules/. Throws `NewError` saying what to change.
 */
export async function scaffold(
  name: string,
  dir: string = name,
  progress: (line: string) => void = () => {},
): Promise<string> {
  const problem = nameProblem(name);
  if (problem !== null) throw new NewError(problem);
  const target = resolve(dir);
  const taken = folderProblem(target);
  if (taken !== null) throw new NewError(taken);
  const { ext } = sdkPackages();
  const created = !existsSync(target);
  mkdirSync(target, { recursive: true });
  try {
    for (const [file, text] of Object.entries(newExtensionFiles(name, ext.version)))
      writeFileSync(join(target, file), text);
    progress(`laying @tether/ext and @tether/cap ${ext.version} into ${join(target, "node_modules")}`);
    await stageSdk(join(target, "node_modules", "@tether"));
  } catch (err) {
    // Nothing half-made is left behind: the folder was ours, or empty before.
    if (created) rmSync(target, { recursive: true, force: true });
    else for (const entry of readdirSync(target)) rmSync(join(target, entry), { recursive: true, force: true });
    throw err;
  }
  return target;
}

/** The command: `args` are its positionals, `dir` its `--dir`. Answers the exit code. */
export async function runNew(args: readonly string[], dir: string | undefined): Promise<number> {
  const [name, ...extra] = args;
  if (name === undefined || extra.length > 0) {
    console.error(
      `tether new: ${name === undefined ? "missing the extension name" : `unexpected '${extra[0]}'`}: ` +
        `tether new <name> [--dir <folder>]`,
    );
    return EXIT.usage;
  }
  let target: string;
  try {
    target = await scaffold(name, dir ?? name, (line) => process.stderr.write(`… ${line}\n`));
  } catch (err) {
    if (err instanceof NewError) {
      console.error(`tether new: ${err.message}`);
      return EXIT.usage;
    }
    console.error(`tether new: ${(err as Error).message}`);
    return EXIT.failed;
  }
  const shown = relative(process.cwd(), target) || ".";
  console.log(`created ${name} in ${shown}\nNext: cd ${shown} && deno test --allow-read=. && tether install ${shown}`);
  return EXIT.ok;
}
