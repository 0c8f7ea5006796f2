/**
 * `tether call <name> <tool> [json]`: one tool call, through a session like
 * every other way in (the library's `Session`, `tether serve`, `tether mcp`),
 * so `tool_call`, `tool_result` and `cap_call` hooks apply to it too. The
 * session is opened for the call and closed after it; nothing else is fired
 * (no `session_start`; `SessionEnd` command hooks run on close, as for
 * `tether session status` and `tether mcp`).
 *
 * `--no-hooks` calls the broker directly instead: no session, no hooks. The
 * operator asked for it by name, so the ledger row says so
 * (`invocations.hooks_bypassed`, shown by `tether audit`).
 */
import * as v from "valibot";
import type { Broker } from "../broker.js";
import { BrokerCode, WireCode } from "../base/errors.js";
import type { Failure, InvocationOutcome } from "../base/outcome.js";
import { parseJsonAt } from "../base/json-syntax.js";
import { GLOBAL } from "../sessions/preferences.js";
import { SessionId, SessionRecords } from "../sessions/session-records.js";
import type { Session } from "../sessions/session.js";
import { workspaceFolder } from "./workspace.js";

/** The session `tether call` uses when no --session is given (its ledger rows say `cli`). */
export const CALL_SESSION = "cli";

export const CALL_USAGE = "tether call <name> <tool> [json] [--session <id>] [--workspace <dir>] [--no-hooks]";

export interface CallArgs {
  readonly extension: string;
  readonly tool: string;
  readonly args: string;
  readonly session: string;
  /** The --workspace given, resolved; null: the session's recorded one, else the current folder. */
  readonly workspace: string | null;
  readonly noHooks: boolean;
}

/** Checks `tether call` arguments before any home is opened: the usage message (exit 2), or what to do. */
export function parseCallArgs(
  positionals: readonly string[],
  values: { session?: string | undefined; workspace?: string | undefined; "no-hooks"?: boolean | undefined },
): CallArgs | string {
  const [extension, tool, args, extra] = positionals;
  if (extension === undefined || tool === undefined) return `missing the extension and tool names: ${CALL_USAGE}`;
  if (extra !== undefined) return `unexpected '${extra}' (quote the JSON arguments as one word): ${CALL_USAGE}`;
  if (args !== undefined) {
    // Said here, with where it goes wrong, before a session boots anything.
    try {
      parseJsonAt(args);
    } catch (err) {
      return `the arguments are not JSON: ${(err as Error).message}. Write them as one quoted word: '{"text": "hi"}'`;
    }
  }
  const session = values.session ?? CALL_SESSION;
  if (session === GLOBAL) return `--session '${GLOBAL}': that name is reserved for the global defaults`;
  const checked = v.safeParse(SessionId, session);
  if (!checked.success) return `--session '${session}': ${checked.issues[0].message}`;
  const noHooks = values["no-hooks"] === true;
  let workspace: string | null = null;
  if (values.workspace !== undefined) {
    if (noHooks) return "--workspace has no use with --no-hooks: no session is opened, so no command hook runs";
    const given = workspaceFolder(values.workspace);
    if ("error" in given) return given.error;
    workspace = given.folder;
  }
  return { extension, tool, args: args ?? "{}", session, workspace, noHooks };
}

export interface CallResult {
  readonly outcome: InvocationOutcome<"tool">;
  /** What hooks said for the user (tool_call and tool_result notes), and the SessionEnd command hooks' notes. */
  readonly notes: readonly string[];
}

/**
 * Makes the call. Throws `TetherError` when the extension is not installed or
 * not approved (the message names the command that fixes it), before any
 * session is opened.
 */
export async function runCall(
  broker: Broker,
  call: CallArgs,
  onReport: (text: string) => void,
  cwd = process.cwd(),
): Promise<CallResult> {
  if (call.noHooks) {
    // No session's boot to load Ajv behind: the command's own chunk of it, before the arguments are checked.
    await broker.toolArgs.load();
    const outcome = await broker.callTool(call.extension, call.tool, call.args, {
      session: call.session,
      onReport,
      hooksBypassed: true,
    });
    return { outcome, notes: [] };
  }
  broker.approved(call.extension); // the same refusal, with the same words, as a direct call
  const { Session: Sessions } = await import("../sessions/session.js");
  // In a fleet the saved record is the fleet's: leased to this host and pulled first.
  await broker.fleet?.openSession(call.session);
  const record = new SessionRecords(broker.store).get(call.session);
  const workspace = call.workspace ?? record?.workspace ?? cwd;
  // The session's saved policy is kept (opening with none would widen it back).
  const session = await Sessions.open(broker, {
    id: call.session,
    workspace,
    ...(record !== null ? { policy: record.policy } : {}),
  });
  let result: CallResult;
  try {
    const shadowed = servedElsewhere(session, call);
    const report = shadowed === null ? await session.callTool(call.tool, call.args, { onReport }) : null;
    result = report === null ? { outcome: shadowed!, notes: [] } : { outcome: report.outcome, notes: report.notes };
  } catch (err) {
    await session.destroy();
    throw err;
  }
  const closeNotes = await session.close();
  return { outcome: result.outcome, notes: [...result.notes, ...closeNotes.map((n) => `SessionEnd hook: ${n}`)] };
}

/**
 * A session addresses a tool by name alone: when the extension named on the
 * command line is not the one serving that name here, the call is not made and
 * the answer says who serves it.
 */
function servedElsewhere(session: Session, call: CallArgs): Failure | null {
  const served = session.tools().find((t) => t.name === call.tool);
  if (served === undefined || served.extension === call.extension) return null;
  const mine = session.status().find((s) => s.name === call.extension);
  const next =
    `Run: tether call ${served.extension} ${call.tool}, ` + `or see tether session status --session ${session.id}`;
  if (mine?.tools.includes(call.tool)) {
    const why =
      mine.state === "active" ? "" : `; '${call.extension}' is ${mine.state} here: ${mine.reason ?? mine.state}`;
    return {
      ok: false,
      error: {
        code: BrokerCode.inactive,
        msg:
          `In session '${session.id}' the tool '${call.tool}' is served ` +
          `by '${served.extension}', not '${call.extension}'${why}. ${next}`,
      },
    };
  }
  return {
    ok: false,
    error: {
      code: WireCode.unknownTool,
      msg:
        `'${call.extension}' serves no tool '${call.tool}'; in session ` +
        `'${session.id}' it is served by '${served.extension}'. ${next}`,
    },
  };
}
