/**
 * @tether/pi: Tether's jailed tools and hooks in the pi coding agent, through
 * `tether serve`. pi loads the default export as an extension (`pi -e
 * <this package>`, or `packages` in pi's settings.json); an SDK user passes
 * `createTetherExtension(options)` among `extensionFactories`.
 *
 * pi's events → Tether's (docs/hooks.md "Events"):
 * - pi session_start → session.open + session.tools (each registered with pi)
 *   + `session_start`; its context goes with the next prompt;
 * - pi input → `before_agent_start` (a block or halt refuses the prompt: pi's
 *   `handled`), its context added in pi's before_agent_start as a message;
 * - pi context → `context` (the conversation out and back, plus its context);
 * - pi agent_end → `agent_end` (a block keeps the turn going as a follow-up
 *   message), then `agent_settled`;
 * - pi session_shutdown → session.close (not for a reload: pi's session goes on).
 * - pi tool_call / tool_result of pi's own tools (bash, read, …) → `tool_call` /
 *   `tool_result` about them (harness-tools.js): a block stops the tool, a
 *   rewrite changes its input, a withheld result is replaced. Jailed tools run
 *   theirs inside `tool.call`.
 */
import { resolveConfig } from "./config.js";
import { CUSTOM_TYPE, piMessages, tetherMessage } from "./context-messages.js";
import { hookHarnessTools } from "./harness-tools.js";
import { registerJailedTools } from "./jailed-tools.js";
import { connectServe } from "./serve-client.js";
import { TetherSession } from "./tether-session.js";

/** The most turns `agent_end` hooks may hold one prompt for (hooks see `held` and should stop sooner). */
const MAX_HOLDS = 8;
/** A conversation bigger than this is not sent to `context` hooks: the server takes messages of at most 4 MiB. */
const MAX_CONTEXT_BYTES = 3 * 1024 * 1024;

/**
 * Tells the user (never the model): pi's notification when it has a UI, else stderr (print mode).
 * @param {{ hasUI: boolean, ui: { notify(message: string, level?: "info" | "warning" | "error"): void } }} ctx
 * @param {string} text
 * @param {"info" | "warning" | "error"} [level]
 */
function tell(ctx, text, level = "info") {
  if (ctx.hasUI) ctx.ui.notify(text, level);
  else process.stderr.write(`${text}\n`);
}

/**
 * The text of the last assistant message of `messages` (what `agent_end` hooks judge).
 * @param {readonly unknown[]} messages
 */
function lastReply(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = /** @type {{ role?: unknown, content?: unknown }} */ (messages[i]);
    if (message?.role !== "assistant" || !Array.isArray(message.content)) continue;
    return message.content
      .filter((c) => c?.type === "text" && typeof c.text === "string")
      .map((c) => c.text)
      .join("\n")
      .slice(0, 1024 * 1024);
  }
  return "";
}

/**
 * The extension, configured by `options` and then the environment (config.js).
 * @param {import("./config.js").TetherPiOptions} [options]
 * @returns {(pi: import("@mariozechner/pi-coding-agent").ExtensionAPI) => Promise<void>}
 */
export function createTetherExtension(options = {}) {
  return async function tether(pi) {
    // Connecting here, not at session_start: a failure to load stops pi with this message,
    // where a failing event handler would only be logged while pi ran on without Tether.
    const config = resolveConfig(options, process.env);
    const client = await connectServe(config);
    /** @type {TetherSession | null} */
    let session = null;
    /** @type {string[]} `before_agent_start` context waiting for pi's before_agent_start. */
    let promptContext = [];
    let held = 0;
    /** The jailed tools registered with pi: their hooks run inside tool.call. */
    let jailed = new Set();

    const notes = (/** @type {any} */ ctx, /** @type {{ notes: string[] } | null} */ verdict) => {
      for (const note of verdict?.notes ?? []) tell(ctx, `tether: ${note}`);
    };
    /** Context for the model with the next prompt. */
    const nextTurn = (/** @type {string[]} */ texts) => {
      if (texts.length > 0)
        pi.sendMessage(
          { customType: CUSTOM_TYPE, content: texts.join("\n\n"), display: false },
          { deliverAs: "nextTurn" },
        );
    };

    pi.on("session_start", async (event, ctx) => {
      const id = config.session ?? `pi-${ctx.sessionManager.getSessionId()}`;
      const open = await TetherSession.open(client, { id, workspace: ctx.cwd });
      session = open;
      for (const line of open.inactive) tell(ctx, `tether: inactive, its tools are not offered: ${line}`, "warning");
      const { registered, skipped } = registerJailedTools(pi, open, await open.tools());
      jailed = new Set(registered);
      for (const line of skipped) tell(ctx, `tether: ${line}`, "warning");
      const started = await open.fire("session_start", { source: event.reason });
      notes(ctx, started);
      nextTurn(started?.context ?? []);
    });

    hookHarnessTools(pi, {
      session: () => session,
      jailed: () => jailed,
      notes,
      warn: (ctx, text) => tell(ctx, text, "warning"),
    });

    pi.on("input", async (event, ctx) => {
      const open = session;
      if (open === null) return;
      if (event.source !== "extension") held = 0;
      const verdict = await open.fire("before_agent_start", { prompt: event.text });
      notes(ctx, verdict);
      const stop = verdict?.block ?? verdict?.halt;
      if (stop) {
        tell(ctx, `tether: the prompt was refused by '${stop.by}': ${stop.reason}`, "warning");
        return { action: "handled" };
      }
      promptContext.push(...(verdict?.context ?? []));
    });

    pi.on("before_agent_start", () => {
      if (promptContext.length === 0) return;
      const content = promptContext.join("\n\n");
      promptContext = [];
      return { message: { customType: CUSTOM_TYPE, content, display: false } };
    });

    pi.on("context", async (event, ctx) => {
      const open = session;
      if (open === null || !open.hooked.has("context")) return;
      if (Buffer.byteLength(JSON.stringify(event.messages)) > MAX_CONTEXT_BYTES) {
        tell(ctx, "tether: the conversation is over 3 MiB; context hooks were not asked this time", "warning");
        return;
      }
      const verdict = await open.fire("context", { messages: event.messages });
      if (verdict === null) return;
      notes(ctx, verdict);
      const changed = verdict.messages === null ? null : piMessages(verdict.messages);
      if (verdict.messages !== null && changed === null)
        tell(
          ctx,
          "tether: a context hook answered messages pi cannot send; the conversation went unchanged",
          "warning",
        );
      if (changed === null && verdict.context.length === 0) return;
      const messages = changed ?? event.messages;
      const added = verdict.context.length > 0 ? [tetherMessage(verdict.context.join("\n\n"))] : [];
      return { messages: /** @type {any} */ ([...messages, ...added]) };
    });

    pi.on("agent_end", async (event, ctx) => {
      const open = session;
      if (open === null) return;
      const verdict = await open.fire("agent_end", { reply: lastReply(event.messages), held });
      notes(ctx, verdict);
      nextTurn(verdict?.context ?? []);
      if (verdict?.halt) tell(ctx, `tether: the turn was halted by '${verdict.halt.by}': ${verdict.halt.reason}`);
      else if (verdict?.block && held < MAX_HOLDS) {
        held++;
        // The hook's reason is the instruction to keep going with.
        pi.sendUserMessage(verdict.block.reason, { deliverAs: "followUp" });
        return;
      }
      notes(ctx, await open.fire("agent_settled", {}));
    });

    pi.on("session_shutdown", async (event) => {
      const open = session;
      session = null;
      try {
        // A reload keeps pi's session, so the Tether session stays open for the reloaded extension to rejoin.
        if (open !== null) await (event.reason === "reload" ? open.settle() : open.close(event.reason));
      } finally {
        await client.close();
      }
    });
  };
}

export default createTetherExtension();
