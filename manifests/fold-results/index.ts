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

export const compactions: Record<string, Strategy> = {
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
