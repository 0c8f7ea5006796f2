import { decodeArgs, json, outcome, refuse, text, v, type Tool } from "@tether/ext";

export const tools: Record<string, Tool> = {
  echo: (args) => {
    const { text: said } = decodeArgs(v.object({ text: v.string() }), args);
    return outcome([text(said)]);
  },
  count: async (args, ctx) => {
    const { n } = decodeArgs(v.object({ n: v.pipe(v.number(), v.integer()) }), args);
    if (n > 100) return refuse("n must be at most 100");
    for (let i = 1; i <= n; i++) {
      ctx.report(`counted ${i} of ${n}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    return outcome([text(`Counted to ${n}`), json({ n })]);
  },
};
