/**
 * What `tether --version` says, and what `tether mcp` tells its clients: the
 * package's version, and the wire protocol the satellites speak (their
 * `hello` names it).
 */
import { existsSync, readFileSync } from "node:fs";
import { RUNTIME_NAME } from "../../jail-runtime/wire/frames.js";

/** The wire protocol between the broker and its satellites: the runtime's name and version. */
export const WIRE_PROTOCOL = RUNTIME_NAME;

/** The version in package.json ("0.0.0" when it cannot be read). */
export function packageVersion(): string {
  try {
    // broker/base/ in a checkout; dist/broker/base/ in the installed package.
    const here = new URL(".", import.meta.url);
    const file = [new URL("../../package.json", here), new URL("../../../package.json", here)].find((url) =>
      existsSync(url),
    );
    if (file === undefined) return "0.0.0";
    const pkg = JSON.parse(readFileSync(file, "utf8")) as { version?: unknown };
    return typeof pkg.version === "string" ? pkg.version : "0.0.0";
  } catch {
    return "0.0.0";
  }
}
