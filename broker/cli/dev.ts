/**
 * `tether dev <folder>`: the extension author's loop. The folder is installed
 * in a **dev home** of its own (never the operator's), approved there, and on
 * every change rebuilt, re-approved and booted once to show what it serves:
 *
 *   rebuilt in 120 ms; tools: a, b
 *
 * What is approved without asking: the first build in the dev home, for
 * exactly what its manifest requests; after that, a build that reaches no
 * further than what was approved there by a person (that first approval, or a
 * widening they confirmed). Reaching further — a new egress rule, a new hook,
 * a raised limit — stops with the diff and asks on the terminal (or takes
 * `--yes-widen`); until then the new build is installed but not approved, so
 * it does not run. New tools and commands are not a widening here: they are
 * what the extension offers, to the author who is calling it.
 *
 * It is tried from another terminal with `tether call --home <dev home> …`,
 * or served while the loop runs: `--serve` (`tether serve` on the dev home)
 * or `--mcp` (the dev session's tools over MCP on stdio; this command's own
 * lines then go to stderr). SIGINT or SIGTERM stops it.
 */
import { existsSync, readFileSync, realpathSync, statSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { createInterface } from "node:readline";
import type { Broker } from "../broker.js";
import { defined } from "../base/defined.js";
import { TetherError } from "../base/errors.js";
import { parseManifest } from "../install/manifest.js";
import { diffGrants, requestedGrants, type GrantDiff, type Grants } from "../registry/grants.js";
import type { Approval, Installed, Registry } from "../registry/registry.js";
import { renderDiff } from "../registry/review.js";
import { resolveHome } from "../store/home.js";
import { OperatorPolicySource } from "../caps/policy.js";
import { policyWarnings } from "../install/check.js";
import { EXIT, UsageError, type CommandContext } from "./command.js";

/** The session `--mcp` serves, and the one each build is booted in to check it. */
export const DEV_SESSION = "dev";
export const CHECK_SESSION = "dev-check";

/** The file that marks a home as made by `tether dev` (and for which folder). */
export const DEV_MARKER = "tether-dev.json";

/** How long the folder must be quiet after a change before a build starts (a save often writes several files). */
export const SETTLE_MS = 50;

/** What an approval made by `tether dev` records as its approver, after the person's name. */
export const APPROVED_BY = {
  first: "tether dev: first approval",
  within: "tether dev: not wider than approved",
  widened: "tether dev: widening confirmed",
} as const;

/** Where dev homes live: `$XDG_STATE_HOME/tether-dev/<name>` (default `~/.local/state/tether-dev/<name>`). */
export function defaultDevHome(env: Readonly<Record<string, string | undefined>>, name: string): string {
  const state =
    env.XDG_STATE_HOME !== undefined && isAbsolute(env.XDG_STATE_HOME)
      ? env.XDG_STATE_HOME
      : join(homedir(), ".local", "state");
  return join(state, "tether-dev", name);
}

/**
 * Whether `diff` reaches further: egress rules, hooks, managed preparation,
 * observing, compaction and providers (what each sees of a session), secret
 * bindings, limits. Tools, commands, context loaders and routes it offers do not.
 */
export function devWidens(diff: GrantDiff): boolean {
  const sees = diff.addedSession.filter(
    (item) =>
      item === "managed" ||
      item.startsWith("observe ") ||
      item.startsWith("compaction ") ||
      item.startsWith("provider "),
  );
  return (
    diff.addedNet.length + diff.addedHooks.length + sees.length + diff.addedSecrets.length + diff.raisedLimits.length >
    0
  );
}

/**
 * What a person agreed to in the dev home: the newest approval that `tether
 * dev` did not make by itself (the first one, a confirmed widening, or one made
 * with `tether approve --home <dev home>`). Null before the first.
 */
export function consentOf(registry: Registry, name: string): Approval | null {
  return registry.approvalHistory(name).find((a) => !a.approvedBy.endsWith(`(${APPROVED_BY.within})`)) ?? null;
}

const real = (path: string): string => {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
};

/** Refuses the operator's home, and any home `tether dev` did not make; null when `devHome` may be used. */
export function refuseHome(devHome: string, env: Readonly<Record<string, string | undefined>>): string | null {
  const operatorHomes = new Set([real(resolveHome(undefined))]);
  if (env.TETHER_HOME) operatorHomes.add(real(resolveHome(env.TETHER_HOME)));
  if (operatorHomes.has(real(devHome))) {
    return (
      `${devHome} is the operator's home; tether dev never installs or approves there. Leave out ` +
      `--home (a dev home is made under $XDG_STATE_HOME/tether-dev/), or name a folder of its own`
    );
  }
  if (existsSync(join(devHome, "tether.db")) && !existsSync(join(devHome, DEV_MARKER))) {
    return (
      `${devHome} holds a home tether dev did not make (no ${DEV_MARKER}); tether dev ` +
      `approves by itself, so it uses only homes of its own. Name another folder with --home`
    );
  }
  return null;
}

/** One line, however many lines the reason had. */
const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ").trim();

/** Asks on the terminal; Ctrl-C answers no and stops the loop as a signal would. */
function ask(question: string): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    let answered = false;
    const done = (yes: boolean) => {
      if (answered) return;
      answered = true;
      rl.close();
      resolveAnswer(yes);
    };
    rl.on("SIGINT", () => {
      done(false);
      process.kill(process.pid, "SIGINT");
    });
    rl.on("close", () => done(false));
    rl.question(`${question} [y/N] `, (answer) => done(/^y(es)?$/i.test(answer.trim())));
  });
}

interface DevOptions {
  readonly folder: string;
  readonly name: string;
  readonly devHome: string;
  readonly who: string;
  readonly yesWiden: boolean;
  /** A person can be asked on this terminal (not with --mcp: stdin is the MCP channel). */
  readonly canAsk: boolean;
  readonly say: (line: string) => void;
  readonly paint: CommandContext["paint"];
}

/** The grants in a few words: `egress: https://a, https://b; hooks: tool_call`. */
function reach(grants: Grants): string {
  const egress = grants.net.length > 0 ? `egress: ${grants.net.join(", ")}` : "no egress";
  const hooks = grants.hooks.length > 0 ? `hooks: ${grants.hooks.join(", ")}` : "no hooks";
  return `${egress}; ${hooks}`;
}

/**
 * Approves what is installed, if a person agreed to what it reaches; otherwise
 * shows the diff and asks. Returns whether the build may run.
 */
async function approveBuild(broker: Broker, installed: Installed, o: DevOptions): Promise<boolean> {
  const registry = broker.registry;
  if (registry.status(installed) === "approved") return true; // nothing changed that the approval pins
  const requested = requestedGrants(installed.manifest);
  const consent = consentOf(registry, o.name);
  if (consent === null) {
    registry.approve(o.name, { by: `${o.who} (${APPROVED_BY.first})` });
    o.say(`approved ${o.name} ${installed.version} in the dev home for what it requests (${reach(requested)})`);
    sayPolicyWarnings(requested.net, o);
    return true;
  }
  const diff = diffGrants(consent.grants, requested);
  if (!devWidens(diff)) {
    registry.approve(o.name, { by: `${o.who} (${APPROVED_BY.within})` });
    return true;
  }
  o.say(o.paint.bold(`${o.name} ${installed.version} asks for more than was approved in the dev home:`));
  for (const line of renderDiff(diff)) o.say(line);
  let yes = o.yesWiden;
  if (!yes && o.canAsk && process.stdin.isTTY) yes = await ask("Approve it in the dev home?");
  if (!yes) {
    const how = o.canAsk && process.stdin.isTTY ? "" : "no terminal to ask on; ";
    o.say(
      `not approved (${how}the build is installed but does not run). Undo the change, or approve it: ` +
        `tether approve ${o.name} --home ${o.devHome}, or run tether dev again with --yes-widen`,
    );
    return false;
  }
  // Approve exactly what was shown: nothing else installs here while the loop waits, but check.
  const now = registry.get(o.name);
  if (now === null || now.manifestHash !== installed.manifestHash || now.artifactHash !== installed.artifactHash)
    return false;
  registry.approve(o.name, { by: `${o.who} (${APPROVED_BY.widened})` });
  o.say(`approved the wider grants (${reach(requested)})`);
  sayPolicyWarnings(requested.net, o);
  return true;
}

/**
 * What review would warn an operator of: rules the policy leaves unreachable,
 * read against the dev home's policy.toml (where the loop's calls are judged);
 * an operator's home refuses them the same way unless its own policy reaches them.
 */
function sayPolicyWarnings(rules: readonly string[], o: DevOptions): void {
  const policy = new OperatorPolicySource(o.devHome);
  const current = policy.current();
  const warnings = policyWarnings(rules, {
    reach: current instanceof Error ? current : current.reach,
    file: policy.file,
  });
  for (const w of warnings) o.say(`warning: ${w}`);
  if (warnings.length > 0)
    o.say(
      "warning: an operator's home refuses these the same way unless its policy.toml reaches them " +
        "(tether review says so there)",
    );
}

/** Boots the dev home's session once: what the extension serves, or why it does not run. */
async function bootCheck(broker: Broker, o: DevOptions): Promise<string> {
  const { Session } = await import("../sessions/session.js");
  const session = await Session.open(broker, { id: CHECK_SESSION, workspace: o.folder });
  try {
    const status = session.status().find((s) => s.name === o.name);
    if (status === undefined) return "it is not installed";
    if (status.state !== "active") return `it does not run: ${oneLine(status.reason ?? status.state)}`;
    const parts = [`tools: ${status.tools.join(", ") || "none"}`];
    if (status.commands.length > 0) parts.push(`commands: ${status.commands.map((c) => `/${c}`).join(", ")}`);
    if (status.hooks.length > 0) parts.push(`hooks: ${status.hooks.join(", ")}`);
    return parts.join("; ");
  } finally {
    await session.close();
  }
}

/** One build: install, approve (or ask), boot; says how it went in one line. */
async function build(broker: Broker, o: DevOptions, first: boolean, reloaded: () => Promise<void>): Promise<void> {
  const started = performance.now();
  const verb = first ? "built" : "rebuilt";
  let installed: Installed;
  try {
    // The name decides the dev home: a manifest renamed under a running loop is not installed here.
    const file = join(o.folder, "manifest.toml");
    const named = parseManifest(readFileSync(file, "utf8"), file).name;
    if (named !== o.name) {
      o.say(
        `not ${verb}: the manifest now names '${named}', not '${o.name}'; ` +
          `run tether dev again to develop '${named}' (in its own dev home)`,
      );
      return;
    }
    ({ installed } = await broker.registry.install(o.folder));
  } catch (err) {
    if (err instanceof TetherError || (err as NodeJS.ErrnoException).code === "ENOENT") {
      o.say(`${verb === "built" ? "build" : "rebuild"} failed: ${oneLine((err as Error).message)}`);
      return;
    }
    throw err;
  }
  const ms = Math.round(performance.now() - started);
  if (!(await approveBuild(broker, installed, o))) return;
  let what: string;
  try {
    what = await bootCheck(broker, o);
  } catch (err) {
    what = `it could not be checked: ${oneLine((err as Error).message)}`;
  }
  o.say(`${verb} in ${ms} ms; ${what}`);
  try {
    await reloaded();
  } catch (err) {
    o.say(`the served session did not reload: ${oneLine((err as Error).message)}`);
  }
}

export async function runDev(ctx: CommandContext): Promise<number> {
  const [given, extra] = ctx.args;
  const usage = "tether dev <folder> [--home <dir>] [--yes-widen] [--serve | --mcp]";
  if (extra !== undefined) throw new UsageError(`unexpected '${extra}': ${usage}`);
  const v = ctx.values;
  if (v.serve === true && v.mcp === true) throw new UsageError("--serve and --mcp do not combine: choose one");
  const serveFlags = (["socket", "port", "token-file"] as const).filter((f) => v[f] !== undefined);
  if (serveFlags.length > 0 && v.serve !== true) throw new UsageError(`--${serveFlags[0]} goes with --serve`);
  const folder = resolve(given!);
  let isFolder = false;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    // said below
  }
  if (!isFolder) throw new UsageError(`'${given}' is not a folder: ${usage}`);
  const manifestFile = join(folder, "manifest.toml");
  let name: string;
  let firstTool: string | undefined;
  try {
    const manifest = parseManifest(readFileSync(manifestFile, "utf8"), manifestFile);
    name = manifest.name;
    firstTool = manifest.tool[0]?.name;
  } catch (err) {
    if (err instanceof TetherError) throw err;
    throw new UsageError(`${manifestFile}: cannot read the manifest (is ${folder} an extension folder?)`);
  }
  const devHome = resolve(typeof v.home === "string" ? v.home : defaultDevHome(ctx.env, name));
  const refused = refuseHome(devHome, ctx.env);
  if (refused !== null) throw new UsageError(refused);

  const mcp = v.mcp === true;
  // With --mcp, stdout is the MCP channel: this command's lines go to stderr.
  const say = (line: string) => (mcp ? process.stderr : process.stdout).write(`${line}\n`);
  const brokerOptions = { ...ctx.options, home: devHome };
  const { Broker } = await import("../broker.js");
  // Quiet on the terminal unless TETHER_LOG says otherwise: what it logs about the extension is in its log file.
  const { createLogger } = await import("../base/log.js");
  const broker = Broker.open({ ...brokerOptions, log: createLogger({ level: ctx.options.logLevel ?? "error" }) });
  writeFileSync(join(devHome, DEV_MARKER), `${JSON.stringify({ name, folder }, null, 2)}\n`, { mode: 0o600 });
  const o: DevOptions = {
    folder,
    name,
    devHome,
    who: ctx.options.operator ?? "author",
    yesWiden: v["yes-widen"] === true,
    canAsk: !mcp,
    say,
    paint: mcp ? { ...ctx.paint, bold: (t: string) => t } : ctx.paint,
  };

  let reloadServed: () => Promise<void> = async () => {};
  let stopped = false;
  let dirty = false;
  let settle = null as NodeJS.Timeout | null;
  let wake = null as (() => void) | null;
  const ignore = (changed: string): boolean => {
    const top = changed.split(sep)[0];
    if (top === ".git") return true;
    // A dev home inside the folder (--home ./.tether-dev): its own writes are no change.
    const inHome = relative(devHome, join(folder, changed));
    return inHome === "" || (!inHome.startsWith("..") && !isAbsolute(inHome));
  };
  let watcher: FSWatcher | null = null;
  let loop: Promise<void> = Promise.resolve();
  let code: number = EXIT.ok;
  // Listened for from the start: a signal during the first build stops the loop once that build is done.
  let signalled = false;
  let onSignalled: (() => void) | null = null;
  const onSignal = () => {
    signalled = true;
    onSignalled?.();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    say(`tether dev: ${name} from ${folder}`);
    say(`dev home: ${devHome} (its own: never the operator's)`);
    watcher = watch(folder, { recursive: true }, (_event, changed) => {
      if (changed !== null && ignore(changed.toString())) return;
      dirty = true;
      // Quiet for SETTLE_MS: a save that writes several files makes one build.
      if (settle !== null) clearTimeout(settle);
      settle = setTimeout(() => {
        settle = null;
        wake?.();
      }, SETTLE_MS);
    });
    await build(broker, o, true, () => reloadServed());
    say(`Try it:  tether call --home ${devHome} ${name} ${firstTool ?? "<tool>"} '{}'`);
    say(`Its log: tether logs --home ${devHome} ${name} -f`);
    say(`Watching ${folder} for changes; Ctrl-C stops.`);

    // Changes made while a build runs are one more build after it, not one each.
    loop = (async () => {
      for (;;) {
        await new Promise<void>((resolveWake) => {
          wake = resolveWake;
          if (stopped || (dirty && settle === null)) resolveWake();
        });
        wake = null;
        if (stopped) return;
        dirty = false;
        await build(broker, o, false, () => reloadServed());
      }
    })();
    const stop = () => {
      stopped = true;
      wake?.();
    };

    if (signalled) {
      // Asked to stop before anything was served.
    } else if (v.serve === true) {
      // tether serve listens for the signals itself, and returns once it has shut down.
      const { runServe } = await import("../tether-serve/command.js");
      code = await runServe({
        broker: brokerOptions,
        ...defined({
          socket: v.socket as string | undefined,
          port: v.port as string | undefined,
          pagesPort: v["pages-port"] as string | undefined,
          tokenFile: v["token-file"] as string | undefined,
        }),
      });
    } else if (mcp) {
      const { runMcp } = await import("../mcp/command.js");
      say(`Serving session '${DEV_SESSION}' over MCP on stdio (the client's stdin closing stops it).`);
      code = await runMcp({
        broker: brokerOptions,
        session: DEV_SESSION,
        workspace: folder,
        onOpen: (reload) => (reloadServed = reload),
      });
    } else {
      await new Promise<void>((resolveSignal) => {
        onSignalled = resolveSignal;
        if (signalled) resolveSignal();
      });
    }
    stop();
    say("tether dev: stopping");
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    stopped = true;
    wake?.();
    if (settle !== null) clearTimeout(settle);
    watcher?.close();
    await loop.catch((err: unknown) => say(`tether dev: ${(err as Error).message}`));
    await broker.close();
  }
  return code;
}
