/**
 * The newcomer's path, exactly as docs/authors.md walks it: the page's
 * commands run in order in a home folder under the system's temp dir (outside
 * the checkout), through the real `tether` (bin/tether.js) and Deno, each in
 * bash; the page's files are written and its diffs applied as it shows them;
 * what each command prints must be what the page shows (times and sizes
 * aside, `⋮` for lines left out). So the page cannot drift from what the
 * tools do, and the path it shows — `tether new`, an edit, `deno test` with
 * fake kv and net, `tether check` catching a tool declared but not exported
 * and a type error, `tether dev` picking up an edit, then install, review,
 * approve and call in the operator's home (`~/.tether`) — works.
 *
 * Every wait is for an event: a command's exit, or the line a watch prints.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { passedEnv } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";
import { applyPatch, ELIDED, matchLines, normalise, walkthroughSteps, type Step } from "../support/walkthrough.js";

const PAGE = join(REPO, "docs", "authors.md");
/** The whole path: a cold Deno cache, a dozen tsx start-ups, bundles and jail boots, on a machine that may be loaded. */
const PATH_TIMEOUT = 600_000;

/** One process's output (stdout and stderr in one stream, as a terminal shows them), and waits on its lines. */
class Output {
  readonly lines: string[] = [];
  #partial = "";
  #ended = false;
  #listeners: Array<() => void> = [];
  readonly exited: Promise<number>;

  constructor(child: ChildProcess) {
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      const parts = (this.#partial + chunk).split("\n");
      this.#partial = parts.pop() ?? "";
      this.lines.push(...parts);
      this.#notify();
    });
    this.exited = new Promise((done) =>
      child.on("close", (code, signal) => {
        if (this.#partial !== "") this.lines.push(this.#partial);
        this.#ended = true;
        this.#notify();
        done(code ?? (signal === null ? -1 : 128));
      }),
    );
  }

  /** Resolves when `test()` holds on the lines so far; rejects when it throws, or with the lines if the process ends first. */
  until(test: () => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        let held: boolean;
        try {
          held = test();
        } catch (err) {
          reject(err as Error);
          return true;
        }
        if (held) resolve();
        else if (this.#ended)
          reject(new Error(`the command ended before ${what}; it printed:\n${this.lines.join("\n")}`));
        else return false;
        return true;
      };
      if (check()) return;
      const listener = (): void => {
        if (check()) this.#listeners = this.#listeners.filter((l) => l !== listener);
      };
      this.#listeners.push(listener);
    });
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/** A folder that stands for a newcomer's machine: a home, `tether` and `deno` on the PATH, nothing of the checkout's environment. */
function machine(): { root: string; home: string; env: Record<string, string> } {
  const root = mkdtempSync(join(tmpdir(), "tether-newcomer-"));
  const home = join(root, "home", "ada");
  const bin = join(root, "bin");
  mkdirSync(home, { recursive: true });
  mkdirSync(bin);
  writeFileSync(
    join(bin, "tether"),
    `#!/bin/sh\nexec '${process.execPath}' '${join(REPO, "bin", "tether.js")}' "$@"\n`,
  );
  chmodSync(join(bin, "tether"), 0o755);
  symlinkSync(denoBinary(), join(bin, "deno"));
  // How this run jails satellites (an unprivileged rerun, a Deno of its own) and which build runs carry over;
  // the home never does.
  const jail = passedEnv();
  const env = {
    ...jail,
    HOME: home,
    USER: "ada",
    LOGNAME: "ada",
    PATH: `${bin}:/usr/bin:/bin`,
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
    TMPDIR: tmpdir(),
  };
  return { root, home, env };
}

/** Runs one command line in bash, stdout and stderr in one stream, no terminal on stdin. */
function start(command: string, cwd: string, env: Record<string, string>): { child: ChildProcess; output: Output } {
  const child = spawn("/bin/bash", ["-c", `exec 2>&1; exec ${command}`], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: false,
  });
  return { child, output: new Output(child) };
}

/** How one command's output compares with the page's: the normalised lines, or a message that shows both. */
function mismatch(
  command: string,
  expected: readonly string[],
  actual: readonly string[],
  root: string,
): string | null {
  const want = expected.map((line) => normalise(line));
  const got = actual.map((line) => normalise(line, root));
  if (matchLines(want, got, true) >= 0) return null;
  return `\`${command}\` printed what docs/authors.md does not show.\n--- the page:\n${expected.join("\n")}\n--- the command (normalised):\n${got.join("\n")}`;
}

test(
  "docs/authors.md's path, run as written: new, edit, deno test, check, dev, install, review, approve, call",
  async () => {
    const steps: Step[] = walkthroughSteps(readFileSync(PAGE, "utf8"));
    const kinds = new Set(steps.map((s) => (s.kind === "run" ? s.command.split(" ").slice(0, 2).join(" ") : s.kind)));
    // The page walks the whole path, not a part of it.
    for (const needed of [
      "tether new",
      "deno test",
      "tether check",
      "tether dev",
      "tether install",
      "tether review",
      "tether approve",
      "tether call",
      "write",
      "patch",
      "more",
      "interrupt",
    ]) {
      expect([...kinds]).toContain(needed);
    }
    const { root, home, env } = machine();
    const began = process.hrtime.bigint();
    let cwd = home;
    let watch: { command: string; child: ChildProcess; output: Output; seen: number } | null = null;
    try {
      for (const step of steps) {
        if (step.kind === "write") writeFileSync(resolve(cwd, step.path), step.text);
        else if (step.kind === "patch")
          writeFileSync(resolve(cwd, step.path), applyPatch(readFileSync(resolve(cwd, step.path), "utf8"), step));
        else if (step.kind === "run" && step.command.startsWith("cd "))
          cwd = resolve(cwd, step.command.slice(3).replace(/^~/, home));
        else if (step.kind === "run" && step.command.startsWith("tether dev")) {
          // A watch: what the page shows of it must be what it prints first; it runs on while the next steps do.
          const { child, output } = start(step.command, cwd, env);
          watch = { command: step.command, child, output, seen: 0 };
          await expectMore(watch, step.expected, root);
        } else if (step.kind === "run") {
          const { output } = start(step.command, cwd, env);
          await output.exited;
          const wrong = mismatch(step.command, step.expected, output.lines, root);
          if (wrong !== null) throw new Error(wrong);
        } else {
          if (watch === null)
            throw new Error(`the page shows more output (${step.expected[0]}) with no command running`);
          if (step.kind === "interrupt") {
            watch.child.kill("SIGINT");
            await watch.output.exited;
            const wrong = mismatch(
              `${watch.command} (after ^C)`,
              step.expected,
              watch.output.lines.slice(watch.seen),
              root,
            );
            if (wrong !== null) throw new Error(wrong);
            watch = null;
          } else await expectMore(watch, step.expected, root);
        }
      }
      expect(watch).toBeNull();
      const seconds = Number(process.hrtime.bigint() - began) / 1e9;
      console.log(`the newcomer's path took ${seconds.toFixed(1)} s wall clock`);
    } finally {
      watch?.child.kill("SIGKILL");
      rmSync(root, { recursive: true, force: true });
    }
  },
  PATH_TIMEOUT,
);

/** Waits until the watch has printed, after what was already matched, lines the page's `expected` lines match. */
async function expectMore(
  watch: { command: string; output: Output; seen: number },
  expected: readonly string[],
  root: string,
): Promise<void> {
  const want = expected.map((line) => normalise(line));
  let end = -1;
  try {
    await watch.output.until(
      () => {
        const got = watch.output.lines.slice(watch.seen).map((line) => normalise(line, root));
        end = matchLines(want, got, false);
        // Without a `⋮`, enough lines that do not match will never match: say so now rather than at the timeout.
        if (end < 0 && !want.includes(ELIDED) && got.length >= want.length) {
          throw new Error(
            `it printed what docs/authors.md does not show.\n--- the page:\n${expected.join("\n")}\n--- the command (normalised):\n${got.join("\n")}`,
          );
        }
        return end >= 0;
      },
      `printing what docs/authors.md shows:\n${expected.join("\n")}`,
    );
  } catch (err) {
    throw new Error(`\`${watch.command}\`: ${(err as Error).message}`);
  }
  watch.seen += end;
}
