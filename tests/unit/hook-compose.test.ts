/**
 * The hook bus's composition rule over in-process hooks: order, first-wins,
 * accumulation, chaining, and the events that cannot veto.
 */
import fc from "fast-check";
import { compose, type BusEvent, type BusHook, type HookAnswer, type Verdict } from "../../broker/hooks/compose.js";

const hookOf = (extension: string, answer: HookAnswer, onError: "note" | "block" = "note"): BusHook => ({
  extension,
  onError,
  ask: async () => answer,
});
const verdict = (v: Verdict): HookAnswer => ({ kind: "verdict", verdict: v });

const answerArb: fc.Arbitrary<HookAnswer> = fc.oneof(
  fc.constant<HookAnswer>({ kind: "unhandled" }),
  fc.string({ maxLength: 8 }).map((reason): HookAnswer => ({ kind: "failed", reason })),
  fc
    .record(
      {
        block: fc.string({ maxLength: 6 }),
        arguments: fc.dictionary(fc.string({ maxLength: 3 }), fc.integer()),
        context: fc.string({ maxLength: 6 }),
        notes: fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
        halt: fc.string({ maxLength: 6 }),
        result: fc.integer(),
        text: fc.string({ maxLength: 20 }),
      },
      { requiredKeys: [] },
    )
    .map((v): HookAnswer => ({ kind: "verdict", verdict: v })),
);

const hooksArb = fc
  .array(fc.tuple(answerArb, fc.constantFrom<"note" | "block">("note", "block")), { maxLength: 8 })
  .map((rows) => rows.map(([answer, onError], i) => hookOf(`ext${i}`, answer, onError)));

const verdictOf = (h: BusHook, answers: ReadonlyMap<string, HookAnswer>) => answers.get(h.extension);

describe("compose() on tool_call", () => {
  test("the first block, rewrite, halt and result win; context and notes add up in registry order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(answerArb, fc.constantFrom<"note" | "block">("note", "block")), { maxLength: 8 }),
        async (rows) => {
          const hooks = rows.map(([answer, onError], i) => hookOf(`ext${i}`, answer, onError));
          const answers = new Map(rows.map(([a], i) => [`ext${i}`, a]));
          const out = await compose("tool_call", hooks);
          const verdicts = hooks.map((h) => ({ h, a: verdictOf(h, answers)! }));
          const firstWith = (pick: (v: Verdict) => unknown) =>
            verdicts.find(({ a }) => a.kind === "verdict" && pick(a.verdict) !== undefined);
          // block: the first verdict block, or the first failed hook with on_error = block, whichever comes first
          const firstBlock = verdicts.find(
            ({ h, a }) =>
              (a.kind === "verdict" && a.verdict.block !== undefined) || (a.kind === "failed" && h.onError === "block"),
          );
          expect(out.block?.by ?? null).toBe(firstBlock?.h.extension ?? null);
          expect(out.rewrite?.by ?? null).toBe(firstWith((v) => v.arguments)?.h.extension ?? null);
          expect(out.halt?.by ?? null).toBe(firstWith((v) => v.halt)?.h.extension ?? null);
          expect(out.result?.by ?? null).toBe(firstWith((v) => v.result)?.h.extension ?? null);
          expect(out.context).toEqual(
            verdicts.flatMap(({ a }) =>
              a.kind === "verdict" && a.verdict.context !== undefined ? [a.verdict.context] : [],
            ),
          );
          const expectedNotes = verdicts.flatMap(({ h, a }) => {
            if (a.kind === "failed")
              return firstBlock?.h === h && h.onError === "block" ? [] : [`${h.extension}'s hook failed: ${a.reason}`];
            return a.kind === "verdict" ? [...(a.verdict.notes ?? [])] : [];
          });
          expect(out.notes).toEqual(expectedNotes);
          expect(out.trace.map((t) => t.extension)).toEqual(hooks.map((h) => h.extension));
        },
      ),
      { numRuns: 300 },
    );
  });

  test("unhandled answers change nothing", async () => {
    await fc.assert(
      fc.asyncProperty(hooksArb, fc.integer({ min: 0, max: 8 }), async (hooks, at) => {
        const withUnhandled = [...hooks.slice(0, at), hookOf("quiet", { kind: "unhandled" }), ...hooks.slice(at)];
        const a = await compose("tool_call", hooks);
        const b = await compose("tool_call", withUnhandled);
        expect({ ...b, trace: [] }).toEqual({ ...a, trace: [] });
      }),
      { numRuns: 200 },
    );
  });

  test("a rewrite that does not validate is refused and noted, and the next valid one wins", async () => {
    const out = await compose(
      "tool_call",
      [hookOf("bad", verdict({ arguments: { city: 5 } })), hookOf("good", verdict({ arguments: { city: "Lisbon" } }))],
      {
        validateArguments: (args) =>
          typeof (args as { city?: unknown }).city === "string" ? null : "expected string at .city",
      },
    );
    expect(out.rewrite).toEqual({ arguments: { city: "Lisbon" }, by: "good" });
    expect(out.notes).toEqual(["bad's rewrite was refused: expected string at .city"]);
    expect(out.trace.map((t) => t.answer)).toEqual(["refused-rewrite", "rewrite"]);
  });

  test("a hook that throws becomes a note, or a block when on_error says block", async () => {
    const throwing = (onError: "note" | "block"): BusHook => ({
      extension: "boom",
      onError,
      ask: async () => Promise.reject(new Error("kaput")),
    });
    expect(await compose("tool_call", [throwing("note")])).toMatchObject({
      block: null,
      notes: ["boom's hook failed: kaput"],
    });
    expect(await compose("tool_call", [throwing("block")])).toMatchObject({
      block: { by: "boom", reason: "boom's hook failed: kaput" },
      notes: [],
    });
  });
});

describe("compose() on other events", () => {
  test("context transforms chain: each hook sees the messages the one before returned", async () => {
    const seen: unknown[] = [];
    const appender = (name: string): BusHook => ({
      extension: name,
      onError: "note",
      ask: async (messages) => {
        seen.push(messages);
        return verdict({ messages: [...(messages ?? []), name] });
      },
    });
    const out = await compose("context", [appender("a"), hookOf("skip", { kind: "unhandled" }), appender("b")], {
      messages: ["start"],
    });
    expect(seen).toEqual([["start"], ["start", "a"]]);
    expect(out.messages).toEqual(["start", "a", "b"]);
  });

  test("before_compact never vetoes: blocks and failing hooks with on_error = block become nothing and notes; text is bounded", async () => {
    await fc.assert(
      fc.asyncProperty(hooksArb, async (hooks) => {
        const out = await compose("before_compact", hooks, { compactLimit: 32 });
        expect(out.block).toBeNull();
        expect(out.halt).toBeNull();
        expect(out.rewrite).toBeNull();
        expect(out.compactText.length).toBeLessThanOrEqual(32);
      }),
      { numRuns: 200 },
    );
  });

  test("usage is notify-only: no answer changes anything", async () => {
    await fc.assert(
      fc.asyncProperty(hooksArb, async (hooks) => {
        const out = await compose("usage", hooks);
        expect(out.block).toBeNull();
        expect(out.rewrite).toBeNull();
        expect(out.halt).toBeNull();
        expect(out.context).toEqual([]);
        // Only failures are noted, never a usage answer's own notes.
        expect(out.notes.every((n) => n.includes("'s hook failed: "))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  test.each<BusEvent>(["session_start", "tool_result", "agent_end", "cap_call"])(
    "%s ignores rewrites and substitute results (they belong to tool_call)",
    async (event) => {
      const out = await compose(event, [hookOf("x", verdict({ arguments: { a: 1 }, result: 2, block: "no" }))]);
      expect(out.rewrite).toBeNull();
      expect(out.result).toBeNull();
      expect(out.block).toEqual({ reason: "no", by: "x" });
    },
  );
});
