/**
 * A session's active tools as an MCP server (Tether's own engine,
 * ./protocol/: it takes each tool's JSON Schema as it is, and loads neither
 * the MCP SDK nor zod, most of the start-up and of the cost per call).
 *
 * - `tools/list`: each active tool, its description, its manifest
 *   `parameters` as `inputSchema` (with `type: "object"` at the top).
 * - `tools/call`: `session.callTool`, so the hook bus applies. Every failure of
 *   the call itself (blocked, refused, crashed, timeout, bad_arguments,
 *   inactive, unknown_tool…) is a result with `isError: true` and the text
 *   `<code>: <message>`, never a JSON-RPC error: the model reads it and can
 *   correct itself. Hooks' context lines follow as more text blocks.
 * - Partials become `notifications/progress` when the request carries a
 *   `progressToken`; `notifications/cancelled` aborts the satellite's call.
 * - `prompts/list`, `prompts/get`: the session's `/commands` (Claude Code shows
 *   them as slash commands): a command's declared `arguments`, or one
 *   optional `args` (its text) when it declares none; getting one runs the
 *   command with the values in order, separated by spaces, and answers its
 *   content as user messages.
 * - `completion/complete`: a command argument's `choices` that start with what
 *   was typed.
 * - Hooks' notes (for the user, not the model) go to `onNote` and to the
 *   client as `notifications/message` logging; so do the lines the tool's
 *   extension writes with its `log` capability during the call (logger: the
 *   extension), each on the call's own stream, at or above the level the
 *   client set with `logging/setLevel`.
 * - `resources/list`, `resources/templates/list`, `resources/read`: the
 *   session's context and the routes that declare a `resource` (./resources.ts),
 *   declared only when the session serves one as the client connects; no
 *   `subscribe` (a route cannot say when its answer changes).
 * - `listChanged`: after a call that shows the session's tools or resources
 *   changed (an approval revoked), and when the session reloads, the client is
 *   told (tools and prompts always; resources when its list differs from what
 *   the client last listed).
 */
import { McpFailure } from "./mcp-failure.js";
import type { CallToolResult, GetPromptResult, Prompt, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { McpEngine, RequestExtra } from "./protocol/engine.js";
import { ErrorCode } from "./protocol/error-codes.js";
import { LOGGING_LEVELS, type LoggingLevel, type ParamsOf } from "./protocol/methods.js";
import { TetherError } from "../base/errors.js";
import type { InvocationOutcome } from "../base/outcome.js";
import type { Session, ToolCallReport } from "../sessions/session.js";
import { readResource, servesResources, sessionResources, type SessionResources } from "./resources.js";
import { announceListsChanged } from "./lists-changed.js";
import { WatchingServer } from "./watching-server.js";

export interface McpServerOptions {
  /** The server's version (the `serverInfo` an MCP client shows). */
  readonly version: string;
  /** Hooks' notes and what the server itself has to say: for the user or the operator, never the model. */
  readonly onNote?: (line: string) => void;
}

type InputSchema = Tool["inputSchema"];

/** Whether some object could satisfy `parameters` (MCP arguments are always an object). */
function describesObjects(parameters: Readonly<Record<string, unknown>>): boolean {
  const type = parameters["type"];
  return type === undefined || type === "object" || (Array.isArray(type) && type.includes("object"));
}

/**
 * A manifest's `parameters` as an MCP `inputSchema`, or null when no object
 * could ever satisfy it (MCP arguments are always an object).
 *
 * - no `type`: `type: "object"` is added (the schema still applies whole);
 * - `type` a list that holds `"object"`: narrowed to `"object"`, the only
 *   kind of value MCP can send;
 * - boolean property schemas (`true` / `false`, valid JSON Schema the SDK's
 *   `Tool` type rejects) become their object forms `{}` and `{ "not": {} }`.
 */
export function inputSchemaOf(parameters: Readonly<Record<string, unknown>>): InputSchema | null {
  if (!describesObjects(parameters)) return null;
  const schema: Record<string, unknown> = { ...parameters, type: "object" };
  const properties = parameters["properties"];
  if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
    schema["properties"] = Object.fromEntries(
      Object.entries(properties as Record<string, unknown>).map(([key, value]) => [
        key,
        value === true ? {} : value === false ? { not: {} } : value,
      ]),
    );
  }
  return schema as InputSchema;
}

/** The MCP `tools/list` entries for the session's active tools; `skipped` are tools no MCP call could reach. */
export function listedTools(session: Session): { tools: Tool[]; skipped: { name: string; extension: string }[] } {
  const tools: Tool[] = [];
  const skipped: { name: string; extension: string }[] = [];
  for (const t of session.tools()) {
    const inputSchema = inputSchemaOf(t.parameters);
    if (inputSchema === null) skipped.push({ name: t.name, extension: t.extension });
    else tools.push({ name: t.name, description: t.description, inputSchema });
  }
  return { tools, skipped };
}

/** The names `tools/list` shows now, in its order (without building every tool's schema). */
function listedToolNames(session: Session): string[] {
  const names: string[] = [];
  for (const t of session.tools()) if (describesObjects(t.parameters)) names.push(t.name);
  return names;
}

const RESOURCE_LISTS = ["resources", "templates"] as const;
type ResourceList = (typeof RESOURCE_LISTS)[number];

/** What identifies each resource list a client is given: its URIs, or its URI templates. */
const resourceListKey: Record<ResourceList, (served: SessionResources) => string> = {
  resources: (served) => JSON.stringify(served.resources.map((r) => r.uri).sort()),
  templates: (served) => JSON.stringify(served.templates.map((t) => t.uriTemplate).sort()),
};

/** The content of an outcome: JSON blocks as JSON text; text, image, audio and resource blocks as they are. */
function contentOf(outcome: InvocationOutcome<"tool"> & { ok: true }): CallToolResult["content"] {
  return outcome.value.content.map((c) =>
    c.type === "json" ? { type: "text" as const, text: JSON.stringify(c.json) ?? "null" } : c,
  );
}

/**
 * One tool call's report as an MCP `CallToolResult`. A failure is
 * `isError: true` with `<code>: <message>`; hooks' context lines follow the
 * tool's own content, each its own text block. `_meta` carries what a harness
 * may want and a model does not need (which extension answered, the ledger
 * row, a tool's `terminate`, a hook's halt).
 */
export function resultOf(report: ToolCallReport): CallToolResult {
  const { outcome } = report;
  const content: CallToolResult["content"] = outcome.ok
    ? contentOf(outcome)
    : [{ type: "text", text: `${outcome.error.code}: ${outcome.error.msg}` }];
  for (const line of report.context) content.push({ type: "text", text: line });
  const reply = outcome.ok ? outcome.value : null;
  // Only what is known: a call no extension served (unknown_tool) has no extension or ledger row.
  const meta: Record<string, unknown> = {};
  if (report.extension !== null) meta["tether/extension"] = report.extension;
  if (report.invocationId !== null) meta["tether/invocation"] = report.invocationId;
  if (reply?.terminate === true) meta["tether/terminate"] = true;
  if (report.halt !== null) meta["tether/halt"] = report.halt;
  if (report.blockedBy !== null) meta["tether/blockedBy"] = report.blockedBy;
  return {
    content,
    ...(outcome.ok ? {} : { isError: true }),
    ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
  };
}

/** What a throw (not an outcome: the session closed under the call, say) reads as. */
function thrownResult(err: unknown): CallToolResult {
  const code = err instanceof TetherError ? err.code : "internal";
  const message = err instanceof Error ? err.message : String(err);
  return { content: [{ type: "text", text: `${code}: ${message}` }], isError: true };
}

type SessionCommand = ReturnType<Session["commands"]>[number];

/** A command as an MCP prompt: its declared arguments, or one optional `args` (its text). */
function promptOf(command: SessionCommand): Prompt {
  const args =
    command.arguments.length > 0
      ? command.arguments.map((a) => ({
          name: a.name,
          ...(a.description !== undefined ? { description: a.description } : {}),
          required: a.required,
        }))
      : [{ name: "args", description: `What follows /${command.name}`, required: false }];
  return { name: command.name, description: command.description, arguments: args };
}

/** The command's text from a prompt's arguments: the declared ones' values in order, separated by spaces. */
function commandText(command: SessionCommand, given: Readonly<Record<string, string>>): string {
  const declared = command.arguments.length > 0 ? command.arguments : [{ name: "args", required: false }];
  const unknown = Object.keys(given).filter((key) => !declared.some((a) => a.name === key));
  if (unknown.length > 0)
    throw new McpFailure(
      ErrorCode.InvalidParams,
      `Prompt '${command.name}' takes ${declared.map((a) => a.name).join(", ")}; not ${unknown.join(", ")}`,
    );
  // The client's own members only: an argument named `constructor` or `toString` left out is not Object's.
  const value = (name: string) => (Object.hasOwn(given, name) ? given[name]! : "").trim();
  const missing = declared.filter((a) => a.required && value(a.name) === "").map((a) => a.name);
  if (missing.length > 0)
    throw new McpFailure(ErrorCode.InvalidParams, `Prompt '${command.name}' needs ${missing.join(", ")}`);
  // Joined with spaces, a value holding one would fill the next argument: only the last may.
  const spaced = declared.slice(0, -1).filter((a) => /\s/.test(value(a.name)));
  if (spaced.length > 0)
    throw new McpFailure(
      ErrorCode.InvalidParams,
      `Prompt '${command.name}': ${spaced.map((a) => a.name).join(", ")} may not hold spaces ` +
        "(the command's text is the values separated by spaces; only the last argument may hold them)",
    );
  // They fill in order: a later value after a left-out one would be read as the left-out one.
  const values = declared.map((a) => value(a.name));
  const gap = values.indexOf("");
  if (gap >= 0 && values.slice(gap).some((v) => v !== ""))
    throw new McpFailure(
      ErrorCode.InvalidParams,
      `Prompt '${command.name}': give ${declared[gap]!.name} too (the arguments fill the command's text in order)`,
    );
  return values.filter((v) => v !== "").join(" ");
}

const namesOf = (session: Session) =>
  session
    .commands()
    .map((c) => c.name)
    .join(", ") || "no prompts";

/** `tools/call` requests one client may have open at once. */
export const MAX_CALLS_IN_FLIGHT = 16;

const sameNames = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((name, i) => name === b[i]);

/** An MCP server over `session` (not connected: `connect` it to a transport). */
export function createMcpServer(session: Session, options: McpServerOptions): McpEngine {
  const note = options.onNote ?? (() => {});
  // Decided as the client connects: a capability cannot be declared later in the connection.
  const withResources = servesResources(session);
  const server = new WatchingServer(
    { name: "tether", version: options.version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        ...(withResources ? { resources: { listChanged: true } } : {}),
        completions: {},
        logging: {},
      },
      instructions:
        `Tools of the Tether session '${session.id}', each run by a ` +
        `jailed extension. Hooks may block a call or withhold its result; ` +
        `a failed call answers "<code>: <message>" (for example "blocked: ` +
        `…" with the hook's reason, or "bad_arguments: …" naming the field).`,
    },
    // While connected: a reload (a preference changed, `tether dev` rebuilt) may change every list.
    () =>
      session.onChange((change) => {
        if (change !== "reloaded") return;
        void announceListsChanged(server);
        void announceResources();
        // Told now, so the calls after it have nothing more to tell of this change (the client lists again).
        if (listed !== null) {
          const revision = session.revision();
          listed = { names: listedToolNames(session), revision };
        }
      }),
  );

  /**
   * The tool names the client last saw and the session's revision they were
   * compared at (null: it has not listed them yet); a change is announced
   * after the call that shows it. The names are worked out again only when
   * the revision grew: per call, that cost ~1.8 µs a tool.
   */
  let listed: { names: string[]; revision: number } | null = null;
  const announced = new Set<string>();

  // One server per client connection, so one level: the lowest the client wants to hear.
  const severity = (level: LoggingLevel) => LOGGING_LEVELS.indexOf(level);
  let threshold: LoggingLevel = "debug";
  server.setRequestHandler("logging/setLevel", (params) => {
    threshold = params.level;
    return {};
  });
  const MCP_LEVEL = { debug: "debug", info: "info", warn: "warning", error: "error" } as const;

  server.setRequestHandler("tools/list", () => {
    // Read first: a change noticed while the list is worked out leaves an older revision, compared again later.
    const revision = session.revision();
    const { tools, skipped } = listedTools(session);
    for (const s of skipped) {
      const key = `${s.extension}:${s.name}`;
      if (announced.has(key)) continue;
      announced.add(key);
      note(
        `tool '${s.name}' of '${s.extension}' is not listed: its parameters ` +
          `schema does not describe an object, and MCP arguments always are one`,
      );
    }
    listed = { names: tools.map((t) => t.name), revision };
    return { tools };
  });

  server.setRequestHandler("prompts/list", () => ({ prompts: session.commands().map(promptOf) }));

  server.setRequestHandler("prompts/get", async (params, extra) => {
    const { name } = params;
    const command = session.commands().find((c) => c.name === name);
    if (command === undefined)
      throw new McpFailure(ErrorCode.InvalidParams, `Unknown prompt '${name}': the session serves ${namesOf(session)}`);
    const text = commandText(command, params.arguments ?? {});
    const { outcome } = await session.runCommand(`/${name}${text === "" ? "" : ` ${text}`}`, { signal: extra.signal });
    if (!outcome.ok) throw new McpFailure(ErrorCode.InternalError, `${outcome.error.code}: ${outcome.error.msg}`);
    const messages: GetPromptResult["messages"] = contentOf(outcome).map((content) => ({ role: "user", content }));
    return { description: command.description, messages };
  });

  server.setRequestHandler("completion/complete", (params) => {
    const { ref, argument } = params;
    const command = ref.type === "ref/prompt" ? session.commands().find((c) => c.name === ref.name) : undefined;
    const choices = command?.arguments.find((a) => a.name === argument.name)?.choices ?? [];
    const values = choices.filter((choice) => choice.startsWith(argument.value));
    // MCP's bound: at most 100 values in one answer.
    return { completion: { values: values.slice(0, 100), total: values.length, hasMore: values.length > 100 } };
  });

  /**
   * What the client was last given of each list (`resources/list`, `resources/templates/list`: each answers
   * one) and the session's revision it was compared at; null: not asked for yet.
   */
  const given: Record<ResourceList, { key: string; revision: number } | null> = { resources: null, templates: null };
  const shadowedNoted = new Set<string>();
  /** Lists what the session serves now, and says once which route resources an earlier extension shadows. */
  const listResources = (which: ResourceList) => {
    // Read first: a change noticed while the list is worked out leaves an older revision, compared again later.
    const revision = session.revision();
    const served = sessionResources(session);
    for (const s of served.shadowed) {
      const key = `${s.extension}/${s.route}`;
      if (shadowedNoted.has(key)) continue;
      shadowedNoted.add(key);
      note(`resource '${s.uri}' of route '${key}' is not served: '${s.by}', earlier in registry order, serves it`);
    }
    // The key of what the client is given (a second look could notice a change it was not told of).
    given[which] = { key: resourceListKey[which](served), revision };
    return served;
  };
  /** Tells the client its resource list changed, when it was given one and that one changed since. */
  const announceResources = async () => {
    if (!withResources || (given.resources === null && given.templates === null)) return;
    let changed = false;
    try {
      const revision = session.revision();
      let served: SessionResources | null = null;
      for (const which of RESOURCE_LISTS) {
        const was = given[which];
        if (was === null || was.revision === revision) continue;
        served ??= sessionResources(session);
        const key = resourceListKey[which](served);
        if (key !== was.key) changed = true;
        given[which] = { key, revision };
      }
    } catch {
      return; // The session closed: the client is about to see the connection end anyway.
    }
    if (changed) await server.sendResourceListChanged().catch(() => {});
  };

  if (withResources) {
    server.setRequestHandler("resources/list", () => ({ resources: listResources("resources").resources }));
    server.setRequestHandler("resources/templates/list", () => ({
      resourceTemplates: listResources("templates").templates,
    }));
    server.setRequestHandler("resources/read", async (params, extra) => {
      const { uri } = params;
      // In order, on the read's own stream, before its answer.
      let sent: Promise<void> = Promise.resolve();
      const logged = (level: LoggingLevel, logger: string, data: string) => {
        if (severity(level) < severity(threshold)) return;
        sent = sent
          .then(() => extra.sendNotification({ method: "notifications/message", params: { level, logger, data } }))
          .catch((err: unknown) => note(`log line not sent: ${(err as Error).message}`));
      };
      try {
        return await readResource(session, uri, {
          signal: extra.signal,
          onNote: (line) => {
            note(line);
            logged("info", "tether", line);
          },
          onLog: (extension, level, line) => logged(MCP_LEVEL[level], extension, line),
        });
      } finally {
        await sent;
        if (!extra.signal.aborted) await announceResources();
      }
    });
  }

  let inFlight = 0;
  server.setRequestHandler("tools/call", async (params, extra) => {
    // One client's calls queue behind each other in the session's extensions; past this bound
    // it is told so instead of holding every other client's calls up behind a long queue.
    if (inFlight >= MAX_CALLS_IN_FLIGHT)
      return {
        content: [
          { type: "text", text: `busy: this client has ${MAX_CALLS_IN_FLIGHT} calls open; wait for one to end` },
        ],
        isError: true,
      };
    inFlight += 1;
    try {
      return await callTool(params, extra);
    } finally {
      inFlight -= 1;
    }
  });

  const callTool = async (params: ParamsOf<"tools/call">, extra: RequestExtra): Promise<CallToolResult> => {
    const { name } = params;
    const args = JSON.stringify(params.arguments ?? {});
    const token = params._meta?.progressToken;
    let progress = 0;
    // Sent in order: each partial's notification is queued behind the one before it.
    let sent: Promise<void> = Promise.resolve();
    const onReport =
      token === undefined
        ? undefined
        : (text: string) => {
            progress += 1;
            const params = { progressToken: token, progress, message: text };
            sent = sent
              .then(() => extra.sendNotification({ method: "notifications/progress", params }))
              .catch((err: unknown) => note(`progress not sent: ${(err as Error).message}`));
          };
    /** A logging notification on this call's stream, in order behind the ones before it. */
    const logged = (level: LoggingLevel, logger: string, data: string) => {
      if (severity(level) < severity(threshold)) return;
      const params = { level, logger, data };
      sent = sent
        .then(() => extra.sendNotification({ method: "notifications/message", params }))
        .catch((err: unknown) => note(`log line not sent: ${(err as Error).message}`));
    };
    // Which extension wrote a line: looked up at the first one (most calls log nothing).
    let extension: string | null = null;
    const writer = () => (extension ??= session.tools().find((t) => t.name === name)?.extension ?? "tether");
    let result: CallToolResult;
    try {
      const report = await session.callTool(name, args, {
        signal: extra.signal,
        ...(onReport !== undefined ? { onReport } : {}),
        onLog: (level, line) => logged(MCP_LEVEL[level], writer(), line),
      });
      for (const line of report.notes) {
        note(`${name}: ${line}`);
        logged("info", "tether", `${name}: ${line}`);
      }
      if (extra.signal.aborted)
        note(`${name}: cancelled by the client (${report.outcome.ok ? "it had finished" : report.outcome.error.code})`);
      result = resultOf(report);
    } catch (err) {
      result = thrownResult(err);
    }
    await sent;
    // A hook may have dropped an extension (its approval was revoked, say): tell the client a list it has changed.
    if (extra.signal.aborted) return result;
    if (listed !== null) {
      let now: { names: string[]; revision: number } | null = null;
      try {
        const revision = session.revision();
        if (revision !== listed.revision) now = { names: listedToolNames(session), revision };
      } catch {
        // The session closed: the client is about to see the connection end anyway.
      }
      if (now !== null) {
        const same = sameNames(listed.names, now.names);
        listed = now;
        if (!same) await server.sendToolListChanged().catch(() => {});
      }
    }
    await announceResources();
    return result;
  };

  return server;
}
