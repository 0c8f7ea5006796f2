import { model } from "@tether/cap";
import type { Fold, Strategy } from "@tether/ext";

/** The newest messages are never folded: the model is still working with them. */
const KEEP_RECENT = 4;

type Message = { role?: unknown; name?: unknown; content?: unknown };

const isToolResult = (m: unknown): m is Message =>
  typeof m === "object" && m !== null && (m as Message).role === "tool";

/** One line for a run of tool results: how many, from which tools, how much text they held. */
function line(run: Message[]): string {
  const tools = [...new Set(run.map((m) => (typeof m.name === "string" ? m.name : "a tool")))];
  const chars = run.reduce((n, m) => n + JSON.stringify(m.content ?? "").length, 0);
  return `${run.length} tool result${run.length === 1 ? "" : "s"} from ${tools.join(", ")} (${chars} characters) folded`;
}

/** The model the summary is asked of: the session's provider preference picks who serves it. */
export const SUMMARY_MODEL = "gpt-4o-mini";
/** The most of the conversation handed to the model, in characters. */
const MAX_PROMPT_CHARS = 64 * 1024;

/** One line per message: its role (or name) and its content as text. */
function transcript(messages: readonly unknown[]): string {
  const lines = messages.map((m) => {
    const msg = (typeof m === "object" && m !== null ? m : { content: m }) as Message;
    const who = typeof msg.name === "string" ? `tool ${msg.name}` : typeof msg.role === "string" ? msg.role : "message";
    const content = typeof msg.content === "string" ? msg.content : JSON.stringify(msg.content ?? "");
    return `${who}: ${content}`;
  });
  return lines.join("\n").slice(0, MAX_PROMPT_CHARS);
}

export const compactions: Record<string, Strategy> = {
  /** All but the newest messages become one fold whose text is the model's summary of them. */
  "summarise-with-model": async ({ messages, hook_text, budget }) => {
    const end = messages.length - KEEP_RECENT;
    if (end <= 0) return { summary: `Nothing to summarise: ${messages.length} messages.`, folds: [] };
    const keep = hook_text.length > 0 ? ` Keep: ${hook_text.join(" ")}` : "";
    const reply = await model.complete({
      model: SUMMARY_MODEL,
      messages: [
        { role: "system", content: `Summarise this conversation in at most ${budget} characters.${keep}` },
        { role: "user", content: transcript(messages.slice(0, end)) },
      ],
      max_tokens: Math.min(512, Math.max(16, Math.floor(budget / 4))),
    });
    const summary = reply.text.slice(0, budget);
    return { summary, folds: [{ from: 0, to: end - 1, text: summary }] };
  },

  "fold-tool-results": ({ messages, hook_text, budget }) => {
    const folds: Fold[] = [];
    const end = Math.max(0, messages.length - KEEP_RECENT);
    for (let i = 0; i < end; i++) {
      if (!isToolResult(messages[i])) continue;
      let j = i;
      while (j + 1 < end && isToolResult(messages[j + 1])) j++;
      folds.push({ from: i, to: j, text: line(messages.slice(i, j + 1) as Message[]) });
      i = j;
    }
    const folded = folds.reduce((n, f) => n + f.to - f.from + 1, 0);
    const kept = hook_text.length > 0 ? ` Kept as asked: ${hook_text.join(" ")}` : "";
    const summary = `Folded ${folded} of ${messages.length} messages (tool results) in ${folds.length} place${folds.length === 1 ? "" : "s"}.${kept}`;
    return { summary: summary.slice(0, Math.max(budget, 64)), folds };
  },
};
