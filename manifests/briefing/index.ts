/**
 * briefing: adds text the model reads. Nothing here blocks; it only informs.
 */
import { hook, proceed } from "@tether/ext";

function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

const CONVENTIONS = "temperatures in °C, dates as YYYY-MM-DD, and ask before deleting anything";

export const tools = {};

export const hooks = {
  session_start: hook("session_start", (start) => {
    const workspace = String(field(start, "workspace"));
    const folder =
      workspace
        .split("/")
        .filter((part) => part !== "")
        .pop() ?? workspace;
    return { context: `briefing: you are working in '${folder}'. Conventions here: ${CONVENTIONS}.` };
  }),
  before_agent_start: hook("before_agent_start", (turn) => {
    const prompt = String(field(turn, "prompt"));
    if (/\b(weather|forecast|temperature)\b/i.test(prompt))
      return { context: "briefing: the weather tools answer in °C; say which city a forecast is for." };
    return proceed;
  }),
  context: hook("context", (p) => {
    const messages = field(p, "messages");
    const list: unknown[] = Array.isArray(messages) ? messages : [];
    return { messages: [...list, { role: "system", content: `briefing: reminder — ${CONVENTIONS}.` }] };
  }),
};
