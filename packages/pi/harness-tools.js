/**
 * pi's own tools (bash, read, edit, write, …) before Tether's hooks: pi's
 * `tool_call` is fired as Tether's `tool_call` about that tool — a block
 * stops it (pi's `block`, with the hook's reason), a rewrite replaces its
 * arguments (pi takes `event.input` changed in place), a substitute result
 * stops it too, naming what answered — and pi's `tool_result` as Tether's
 * `tool_result`: a block withholds the result, context rides along. Jailed
 * tools are not fired about here: `tool.call` runs their hooks itself.
 */

/** The hooks' text shown to the model in place of a withheld result, at most. */
const MAX_REASON_CHARS = 64 * 1024;

/**
 * @param {import("@mariozechner/pi-coding-agent").ExtensionAPI} pi
 * @param {{
 *   session: () => import("./tether-session.js").TetherSession | null,
 *   jailed: () => ReadonlySet<string>,
 *   notes: (ctx: any, verdict: { notes: string[] } | null) => void,
 *   warn: (ctx: any, text: string) => void,
 * }} parts
 */
export function hookHarnessTools(pi, parts) {
  /** When each call of a pi tool started (Date.now()), by its call id. */
  const started = new Map();

  /** The verdict, or null when none applies (no session, a jailed tool, the broker refused the event). */
  const fire = async (/** @type {any} */ ctx, /** @type {"tool_call" | "tool_result"} */ event, payload) => {
    const open = parts.session();
    if (open === null || parts.jailed().has(payload.tool)) return null;
    try {
      const verdict = await open.fire(event, payload);
      parts.notes(ctx, verdict);
      return verdict;
    } catch (error) {
      // Say it and let pi's tool run: the guard is Tether's hooks, and they could not be asked.
      parts.warn(ctx, `tether: ${event} hooks were not asked about '${payload.tool}': ${error.message}`);
      return null;
    }
  };

  pi.on("tool_call", async (event, ctx) => {
    started.set(event.toolCallId, Date.now());
    const payload = { tool: event.toolName, call_id: event.toolCallId, arguments: event.input };
    const verdict = await fire(ctx, "tool_call", payload);
    if (verdict === null) return;
    const stop = verdict.block ?? verdict.halt;
    if (stop) return { block: true, reason: `Blocked by '${stop.by}': ${stop.reason}`.slice(0, MAX_REASON_CHARS) };
    if (verdict.result !== null) {
      const text =
        typeof verdict.result.value === "string" ? verdict.result.value : JSON.stringify(verdict.result.value);
      // pi cannot answer a call in its tool's place: the call is stopped, and the model reads the substitute.
      return { block: true, reason: `'${verdict.result.by}' answered instead: ${text}`.slice(0, MAX_REASON_CHARS) };
    }
    const rewritten = verdict.rewrite?.arguments;
    if (typeof rewritten === "object" && rewritten !== null && !Array.isArray(rewritten)) {
      for (const key of Object.keys(event.input)) delete event.input[key];
      Object.assign(event.input, rewritten);
    }
  });

  pi.on("tool_result", async (event, ctx) => {
    const startedMs = started.get(event.toolCallId) ?? Date.now();
    started.delete(event.toolCallId);
    const payload = {
      tool: event.toolName,
      call_id: event.toolCallId,
      arguments: event.input,
      ok: !event.isError,
      result: event.content,
      started_ms: startedMs,
      finished_ms: Date.now(),
    };
    const verdict = await fire(ctx, "tool_result", payload);
    if (verdict === null) return;
    const withheld = verdict.block ?? verdict.halt;
    const context = verdict.context.map((text) => ({ type: /** @type {const} */ ("text"), text }));
    if (withheld) {
      const text = `The result was withheld by '${withheld.by}': ${withheld.reason}`.slice(0, MAX_REASON_CHARS);
      return { content: [{ type: "text", text }, ...context], isError: true };
    }
    if (context.length > 0) return { content: [...event.content, ...context] };
  });
}
