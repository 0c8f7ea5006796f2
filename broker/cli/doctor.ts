/**
 * `tether doctor`: which jail layers are active, and whether the pieces work;
 * that the operator's policy.toml parses; and it collects artifacts (and
 * their Deno caches and source records) that no install refers to any more.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { BrokerOptions } from "../broker.js";
import { parseOperatorPolicy } from "../caps/policy.js";
import { parseHooksFile } from "../hooks/hooks-file.js";
import { matcherWarnings } from "../hooks/matcher-warnings.js";
import { denoBinary } from "../jail/deno-binary.js";
import { jailIdentity, makeSatelliteDir, type JailIdentity } from "../jail/identity.js";
import { jailLayers } from "../jail/layers.js";
import { jailSetup } from "../jail/setup.js";
import { findBwrap } from "../jail/sandbox.js";
import { prepareHome, resolveHome } from "../store/home.js";
import { journalState } from "../store/journal-state.js";
import { migrationsFolder, openStore, type Store } from "../store/open.js";
import { collectUnreferenced } from "../registry/artifact-gc.js";
import { Registry } from "../registry/registry.js";
import { FileSecrets, SecretStoreError } from "../secrets/store.js";

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

/** The checks, for a broker opened with `options` (the tether command's --home and environment). */
export function runChecks(options: Omit<BrokerOptions, "log"> = {}): Check[] {
  const checks: Check[] = [];
  const setup = jailSetup(options);
  let deno: string | null = null;
  try {
    deno = denoBinary(setup.deno);
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
    const insecure = options.sandbox === "none";
    checks.push({
      name: "sandbox",
      ok: insecure,
      detail: insecure
        ? "bubblewrap missing; TETHER_INSECURE_NO_SANDBOX=1 set: satellites " +
          "run under Deno permissions only, and can import any local file"
        : "bubblewrap missing: satellites will not start. Install it: apt-get install -y bubblewrap",
    });
  } else {
    const probe = tryRun(bwrap, ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]);
    checks.push(
      probe instanceof Error
        ? {
            name: "sandbox",
            ok: false,
            detail: `bubblewrap at ${bwrap} cannot create namespaces here: ${probe.message.split("\n")[0]}`,
          }
        : {
            name: "sandbox",
            ok: true,
            detail: `bubblewrap at ${bwrap}: both layers active (namespaces + Deno permissions)`,
          },
    );
  }
  // Every other layer matters only when bubblewrap does.
  if (bwrap !== null) for (const layer of jailLayers(setup)) checks.push(layer);
  let homeDir: string | null = null;
  let artifacts: Check | null = null;
  let secrets: Check | null = null;
  let tools: string[] = [];
  try {
    const paths = prepareHome(resolveHome(options.home));
    homeDir = paths.home;
    const store = openStore(paths.db);
    const { journal, appliedMigrations: applied } = journalState(store);
    artifacts = artifactsCheck(store, paths.artifacts, join(paths.home, "cache", "deno"));
    const registry = new Registry(store, paths.artifacts);
    secrets = secretsCheck(registry, paths.home);
    tools = registry.list().flatMap((installed) => installed.manifest.tool.map((t) => t.name));
    store.close();
    const shipped = (
      JSON.parse(readFileSync(join(migrationsFolder(), "meta", "_journal.json"), "utf8")) as { entries: unknown[] }
    ).entries.length;
    checks.push(
      applied === shipped
        ? {
            name: "store",
            ok: true,
            detail: `${paths.db}: journal ${String(journal)}, ${applied} of ${shipped} migrations applied`,
          }
        : {
            name: "store",
            ok: false,
            detail:
              `${paths.db}: ${applied} migrations applied but this broker ` +
              `ships ${shipped}: the store was made by a newer broker, or a migration failed`,
          },
    );
  } catch (err) {
    checks.push({ name: "store", ok: false, detail: `cannot open the store: ${(err as Error).message}` });
  }
  if (artifacts !== null) checks.push(artifacts);
  if (secrets !== null) checks.push(secrets);
  if (homeDir !== null) checks.push(homeCheck(homeDir), hooksCheck(homeDir, tools), policyCheck(homeDir));
  checks.push(socketCheck(jailIdentity(setup.identity)));
  return checks;
}

/**
 * Secrets approved extensions may name: each set and readable
 * (one not set is noted: requests naming it are refused).
 */
function secretsCheck(registry: Registry, home: string): Check {
  const store = new FileSecrets(home);
  const unset: string[] = [];
  let count = 0;
  let filled = 0;
  try {
    for (const installed of registry.list()) {
      if (registry.status(installed) !== "approved") continue;
      for (const b of registry.latestApproval(installed.name)!.grants.secrets) {
        // A secret a sign-in fills is not one to set by hand (tether logins says whether it is signed in).
        if (installed.manifest.login.some((l) => l.secret === b.name)) {
          filled++;
          continue;
        }
        count++;
        if (store.get(installed.name, b.name) === null) unset.push(`tether secret set ${installed.name} ${b.name}`);
      }
    }
  } catch (err) {
    if (err instanceof SecretStoreError) return { name: "secrets", ok: false, detail: err.message };
    throw err;
  }
  const bySignIn = filled === 0 ? "" : `; ${filled} filled by signing in (tether logins says which are)`;
  if (count === 0)
    return {
      name: "secrets",
      ok: true,
      detail: filled === 0 ? "no approved extension uses a secret" : `no secret to set by hand${bySignIn}`,
    };
  if (unset.length === 0)
    return { name: "secrets", ok: true, detail: `${count} approved secrets, all set, in ${store.dir}${bySignIn}` };
  return {
    name: "secrets",
    ok: true,
    detail:
      `${unset.length} of ${count} approved secrets NOT SET (requests ` +
      `naming them are refused): ${unset.join("; ")}${bySignIn}`,
  };
}

/** The home holds approvals and artifacts: nobody else may write there. */
function homeCheck(dir: string): Check {
  const mode = statSync(dir).mode & 0o777;
  const octal = mode.toString(8).padStart(3, "0");
  if ((mode & 0o022) !== 0) {
    return {
      name: "home",
      ok: false,
      detail:
        `${dir} is writable by others (mode ${octal}): anyone who can ` +
        `write there can swap an approved artifact. Run: chmod go-w ${dir}`,
    };
  }
  return { name: "home", ok: true, detail: `${dir}: mode ${octal}, writable only by its owner` };
}

/** The built-in hooks extension's file, when there is one, and its matchers against the installed tools. */
function hooksCheck(dir: string, tools: readonly string[]): Check {
  const file = join(dir, "hooks.json");
  if (!existsSync(file))
    return { name: "hooks", ok: true, detail: `no ${file}: the built-in hooks extension has nothing to run` };
  try {
    const parsed = parseHooksFile(readFileSync(file, "utf8"), file);
    const warnings = matcherWarnings(parsed, tools);
    return {
      name: "hooks",
      // Still ok: the file loads and its other groups run; the warning says which never will.
      ok: true,
      detail:
        warnings.length > 0
          ? `${parsed.rows.length} command hooks; warning: ${warnings.join("; ")}`
          : `${file}: ${parsed.rows.length} command hooks (they run when the ` +
            `built-in hooks extension is enabled: tether session enable hooks)`,
    };
  } catch (err) {
    return { name: "hooks", ok: false, detail: (err as Error).message };
  }
}

/** Artifacts no install names (replaced, uninstalled, left by a crash) are removed, with their Deno caches. */
function artifactsCheck(store: Store, dir: string, denoCache: string): Check {
  try {
    const c = collectUnreferenced(store, dir, denoCache);
    const removed = [...c.artifacts, ...c.caches.map((name) => `cache/deno/${name}`)];
    return {
      name: "artifacts",
      ok: true,
      detail:
        `${c.kept} installed in ${dir}; ` +
        (removed.length === 0 ? "nothing unreferenced" : `removed what no install refers to: ${removed.join(", ")}`),
    };
  } catch (err) {
    return {
      name: "artifacts",
      ok: false,
      detail: `cannot collect unreferenced artifacts in ${dir}: ${(err as Error).message}`,
    };
  }
}

/** The operator's policy.toml, when there is one: a file that does not parse refuses every egress call. */
function policyCheck(dir: string): Check {
  const file = join(dir, "policy.toml");
  if (!existsSync(file))
    return {
      name: "policy",
      ok: true,
      detail:
        `no ${file}: the defaults apply (no deny rules; no ` +
        `loopback, private or other non-public address reachable)`,
    };
  try {
    const p = parseOperatorPolicy(readFileSync(file, "utf8"), file);
    const reach = [
      ...p.reach.classes,
      ...(p.reach.metadata.length > 0 ? [`${p.reach.metadata.length} metadata address(es)`] : []),
    ];
    return {
      name: "policy",
      ok: true,
      detail:
        `${file}: ${p.deny.length} deny rules; rules may ` +
        `reach ${reach.length === 0 ? "public addresses only" : `public and ${reach.join(", ")}`}`,
    };
  } catch (err) {
    return {
      name: "policy",
      ok: false,
      detail: `${(err as Error).message}. Until it is fixed every egress call is refused`,
    };
  }
}

/** Satellite sockets live in private directories under the temp folder (the jail root when the broker is root). */
function socketCheck(identity: JailIdentity | null): Check {
  if (identity !== null) {
    const dir = makeSatelliteDir(identity);
    rmdirSync(dir);
    const under = dirname(dir);
    return {
      name: "sockets",
      ok: true,
      detail: `satellite sockets go in folders owned by the jail user under ${under} (traversable, not listable)`,
    };
  }
  const base = tmpdir();
  try {
    const st = statSync(base);
    const worldWritable = (st.mode & 0o002) !== 0;
    const sticky = (st.mode & 0o1000) !== 0;
    if (worldWritable && !sticky) {
      return {
        name: "sockets",
        ok: false,
        detail:
          `${base} is world-writable without the sticky bit: another user could ` +
          `replace a satellite's socket directory. Set TMPDIR to a private folder`,
      };
    }
    const probe = mkdtempSync(join(base, "tether-sat-"));
    const mode = statSync(probe).mode & 0o777;
    rmdirSync(probe);
    if (mode !== 0o700)
      return {
        name: "sockets",
        ok: false,
        detail: `a socket directory under ${base} was created with mode ${mode.toString(8)}, not 700 (check the umask)`,
      };
    return {
      name: "sockets",
      ok: true,
      detail: `satellite sockets go in private directories (mode 700) under ${base}${worldWritable ? " (sticky)" : ""}`,
    };
  } catch (err) {
    return {
      name: "sockets",
      ok: false,
      detail: `cannot create a socket directory under ${base}: ${(err as Error).message}`,
    };
  }
}
