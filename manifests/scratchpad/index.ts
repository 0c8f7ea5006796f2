import { skv } from "@tether/cap";
import { decodeArgs, outcome, text, v, type Managed, type Observer, type Route, type Tool } from "@tether/ext";

/** Past this many lines the session is warned that the pad wants summarising. */
const LONG = 50;

/** Lines jotted since the last flush: memory is per satellite, the pad is per session (skv). */
let pending: string[] = [];

async function lines(): Promise<string[]> {
  return ((await skv.get("lines")) as string[] | null) ?? [];
}

/** Writes what is pending to the session's storage; after this the lines survive a restart. */
async function flush(): Promise<number> {
  if (pending.length === 0) return 0;
  const flushed = pending;
  pending = [];
  await skv.put("lines", [...(await lines()), ...flushed]);
  return flushed.length;
}

export const tools: Record<string, Tool> = {
  jot: (args) => {
    const { line } = decodeArgs(v.object({ line: v.string() }), args);
    pending.push(line);
    return outcome([text(`Jotted (${pending.length} not yet saved; saved after this turn).`)]);
  },
  pad: async () => {
    const all = [...(await lines()), ...pending];
    return outcome([text(all.length === 0 ? "The pad is empty." : all.map((l, i) => `${i + 1}. ${l}`).join("\n"))]);
  },
};

export const managed: Managed = {
  prepare: async () => {
    pending = [];
    const kept = await lines();
    const turns = ((await skv.get("turns")) as number | null) ?? 0;
    return {
      instructions: "You have a scratchpad for this session: `jot` adds a line, `pad` reads it.",
      ...(kept.length > 0
        ? {
            context: `Scratchpad (${kept.length} lines, ${turns} turns so far):\n${kept.map((l) => `- ${l}`).join("\n")}`,
          }
        : {}),
      ...(kept.length > LONG
        ? { warnings: [`the scratchpad has ${kept.length} lines; ask the model to summarise it`] }
        : {}),
    };
  },
  // The session is letting go (closed, reloaded out, or its activation failed): save what is pending.
  close: async () => {
    await flush();
  },
};

/** After each turn: count it and flush what was jotted during it. */
export const observe: Observer = async (batch) => {
  const turns = batch.events.filter((e) => e.kind === "turn").length;
  if (turns > 0) await skv.put("turns", (((await skv.get("turns")) as number | null) ?? 0) + turns);
  await flush();
};

export const routes: Record<string, Route> = {
  summary: async () =>
    JSON.stringify({ saved: await lines(), pending, turns: ((await skv.get("turns")) as number | null) ?? 0 }),
};
