/** The `--workspace` option, as `tether call` and `tether session status` take it. */
import { statSync } from "node:fs";
import { resolve } from "node:path";

/** `--workspace`: the folder, resolved, or why it is not one. */
export function workspaceFolder(given: string): { folder: string } | { error: string } {
  const folder = resolve(given);
  let isDir = false;
  try {
    isDir = statSync(folder).isDirectory();
  } catch {
    // Not there: said below.
  }
  return isDir ? { folder } : { error: `--workspace '${given}': not a folder` };
}
