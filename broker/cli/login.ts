/**
 * `tether login`, `tether logout` and `tether logins`: the operator's side of
 * the sign-ins the broker runs (docs/login.md). The prompt (a URL to open, a
 * code to enter) goes to stdout, progress to stderr; no token is ever printed.
 */
import { loginsOf } from "../login/logins.js";
import { renderStatuses, statusLine } from "../login/status.js";
import { EXIT, UsageError, type CommandContext } from "./command.js";
import type { Prompt } from "../login/flow.js";

/** `--timeout <s>`: how long to wait for the browser's redirect (default 300). */
export function parseTimeout(value: unknown): number {
  if (value === undefined) return 300_000;
  const seconds = typeof value === "string" && /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(seconds >= 1 && seconds <= 86_400))
    throw new UsageError(`--timeout takes seconds, 1 to 86400, not '${String(value)}'`);
  return seconds * 1000;
}

/** What the operator reads to sign in. */
export function promptText(extension: string, login: string, p: Prompt): string {
  if (p.flow === "device") {
    return [
      `To sign ${extension} in (${login}), open ${p.verificationUri} and enter the code:`,
      "",
      `    ${p.userCode ?? ""}`,
      "",
      ...(p.verificationUriComplete !== null ? [`(or open ${p.verificationUriComplete}, which carries the code)`] : []),
      `The code works for ${p.expiresIn} s; waiting for the sign-in (Ctrl-C cancels).`,
    ].join("\n");
  }
  return [
    `To sign ${extension} in (${login}), open this URL in a browser on this machine:`,
    "",
    `    ${p.authorizationUrl ?? ""}`,
    "",
    `Waiting up to ${p.expiresIn} s for the redirect to ${p.redirectUri ?? ""} (Ctrl-C cancels).`,
  ].join("\n");
}

export async function runLogin(ctx: CommandContext): Promise<number> {
  const [extension, login] = ctx.args as [string, string | undefined];
  const timeoutMs = parseTimeout(ctx.values.timeout);
  return ctx.withBroker(async (broker) => {
    const logins = loginsOf(broker);
    const controller = new AbortController();
    const onSignal = () => controller.abort(new Error("cancelled"));
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      const started = await logins.start(extension, login, {
        signal: controller.signal,
        timeoutMs,
        progress: (line) => process.stderr.write(`… ${line}\n`),
      });
      // With --json stdout is the final answer only: the prompt goes to stderr.
      (ctx.json ? process.stderr : process.stdout).write(
        `${promptText(extension, started.row.name, started.prompt)}\n`,
      );
      await started.done;
      const status = logins.status(extension).find((s) => s.login === started.row.name)!;
      ctx.out(status, `signed in: ${extension} ${statusLine(status)}`);
      return EXIT.ok;
    } catch (err) {
      if (!controller.signal.aborted) throw err;
      console.error(`tether login: cancelled; ${extension} is not signed in (anything stored before stays)`);
      return EXIT.failed;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  });
}

export async function runLogout(ctx: CommandContext): Promise<number> {
  const [extension, login] = ctx.args as [string, string | undefined];
  return ctx.withBroker(async (broker) => {
    const reports = await loginsOf(broker).logout(extension, login);
    for (const r of reports) for (const note of r.notes) process.stderr.write(`… ${r.login}: ${note}\n`);
    const text =
      reports.length === 0
        ? `${extension}: no sign-in to remove`
        : reports
            .map(
              (r) =>
                `${extension} ${r.login}: ${r.deleted ? "signed out; the tokens are deleted" : "was not signed in"}`,
            )
            .join("\n");
    ctx.out(reports, text);
    return EXIT.ok;
  });
}

export async function runLogins(ctx: CommandContext): Promise<number> {
  return ctx.withBroker(async (broker) => {
    const statuses = loginsOf(broker).status(ctx.args[0]);
    ctx.out(statuses, renderStatuses(statuses));
    return EXIT.ok;
  });
}
