/**
 * `tether doctor`: which jail layers are active, and whether the pieces work.
 */
import { execFileSync } from "node:child_process";
import { denoBinary } from "../jail/deno-binary.js";
import { findBwrap } from "../jail/sandbox.js";
import { prepareHome, resolveHome } from "../store/home.js";
import { openStore } from "../store/open.js";

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

function tryRun(file: string, args: string[]): string | Error {
  try {
    return execFileSync(file, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 10_000 }).trim();
  } catch (err) {
    return err as Error;
  }
}

export function runChecks(home?: string): Check[] {
  const checks: Check[] = [];
  let deno: string | null = null;
  try {
    deno = denoBinary();
    const version = tryRun(deno, ["--version"]);
    checks.push(
      version instanceof Error
        ? { name: "deno", ok: false, detail: `${deno} does not run: ${version.message}` }
        : { name: "deno", ok: true, detail: `${version.split("\n")[0]} at ${deno}` },
    );
  } catch (err) {
    checks.push({ name: "deno", ok: false, detail: (err as Error).message });
  }
  const bwrap = findBwrap();
  if (bwrap === null) {
    const insecure = process.env.TETHER_INSECURE_NO_SANDBOX === "1";
    checks.push({
      name: "sandbox",
      ok: insecure,
      detail: insecure
        ? "bubblewrap missing; TETHER_INSECURE_NO_SANDBOX=1 set: satellites run under Deno permissions only, and can import any local file"
        : "bubblewrap missing: satellites will not start. Install it: apt-get install -y bubblewrap",
    });
  } else {
    const probe = tryRun(bwrap, ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]);
    checks.push(
      probe instanceof Error
        ? { name: "sandbox", ok: false, detail: `bubblewrap at ${bwrap} cannot create namespaces here: ${probe.message.split("\n")[0]}` }
        : { name: "sandbox", ok: true, detail: `bubblewrap at ${bwrap}: both layers active (namespaces + Deno permissions)` },
    );
  }
  try {
    const paths = prepareHome(resolveHome(home));
    const store = openStore(paths.db);
    const journal = store.sqlite.pragma("journal_mode", { simple: true });
    const applied = store.sqlite.prepare("select count(*) as n from __drizzle_migrations").get() as { n: number };
    store.close();
    checks.push({ name: "store", ok: true, detail: `${paths.db}: journal ${String(journal)}, ${applied.n} migrations applied` });
  } catch (err) {
    checks.push({ name: "store", ok: false, detail: `cannot open the store: ${(err as Error).message}` });
  }
  return checks;
}
