/**
 * Probes of the satellite runtime's invocation context (`jail-runtime/cap/intrinsics.ts`): each way code
 * moves from one turn to a later one — an await, `then`, a microtask, a timer (the runtime's and the
 * global one), an async generator, `Promise.all` — must see the store of the run it came from, several
 * runs open at once each their own, and nothing outside a run. Run by jest under Node (AsyncLocalStorage)
 * and, bundled, by the pinned Deno (its core's async variable), also after the globals and Deno's core
 * were patched as an extension could patch them: `tests/unit/satellite-async-context.test.ts`.
 */
import { InvocationContext, asyncContextSource, clearTimer, setTimer } from "../../../jail-runtime/cap/intrinsics.js";

/** What each probe saw (the name of a run's store, or null outside any run). */
export type ProbeResults = Record<string, string | null | boolean>;

/** What every probe must see, whichever runtime runs them. */
export const EXPECTED: ProbeResults = {
  outside: null,
  "sync inside": "a",
  "after await": "a",
  "in then": "a",
  "in a microtask": "a",
  "in the runtime's timer": "a",
  "in the global timer": "a",
  "in an async generator": "a",
  "nested, inner": "b",
  "nested, after the inner run": "a",
  "two open, first after the second resolved it": "first",
  "two open, second after the first resolved it": "second",
  "Promise.all, left": "left",
  "Promise.all, right": "right",
  "after a run that threw": null,
  "after a run whose promise is pending": null,
  "a cleared timer did not fire": true,
};

const named = (store: { name: string } | undefined): string | null => store?.name ?? null;
// The global timer as extension code finds it, read before any probe patches globals.
const globalSetTimeout = globalThis.setTimeout;

export async function asyncContextProbes(): Promise<ProbeResults> {
  const context = new InvocationContext<{ name: string }>();
  const seen: ProbeResults = {};
  const see = (probe: string) => {
    seen[probe] = named(context.get());
  };
  see("outside");
  await (context.run({ name: "a" }, async () => {
    see("sync inside");
    await null;
    see("after await");
    await Promise.resolve().then(() => see("in then"));
    await new Promise<void>((resolve) =>
      queueMicrotask(() => {
        see("in a microtask");
        resolve();
      }),
    );
    await new Promise<void>((resolve) =>
      setTimer(() => {
        see("in the runtime's timer");
        resolve();
      }, 1),
    );
    await new Promise<void>((resolve) =>
      globalSetTimeout(() => {
        see("in the global timer");
        resolve();
      }, 1),
    );
    const generator = async function* () {
      await null;
      yield named(context.get());
    };
    for await (const name of generator()) seen["in an async generator"] = name;
    await (context.run({ name: "b" }, async () => {
      await null;
      see("nested, inner");
    }) as Promise<void>);
    see("nested, after the inner run");
  }) as Promise<void>);

  // Two runs open at once, each resumed by the other: each still sees its own store.
  let resolveFirst!: () => void;
  let resolveSecond!: () => void;
  const firstGate = new Promise<void>((r) => (resolveFirst = r));
  const secondGate = new Promise<void>((r) => (resolveSecond = r));
  const first = context.run({ name: "first" }, async () => {
    await firstGate;
    see("two open, first after the second resolved it");
    resolveSecond();
  }) as Promise<void>;
  const second = context.run({ name: "second" }, async () => {
    await null;
    resolveFirst();
    await secondGate;
    see("two open, second after the first resolved it");
  }) as Promise<void>;
  await Promise.all([first, second]);

  const [left, right] = await Promise.all(
    ["left", "right"].map(
      (name) =>
        context.run({ name }, async () => {
          await new Promise<void>((resolve) => setTimer(resolve, 1));
          return named(context.get());
        }) as Promise<string | null>,
    ),
  );
  seen["Promise.all, left"] = left ?? null;
  seen["Promise.all, right"] = right ?? null;

  try {
    context.run({ name: "thrower" }, () => {
      throw new Error("thrown inside");
    });
  } catch {
    see("after a run that threw");
  }
  let release!: () => void;
  const pending = context.run({ name: "pending" }, () => new Promise<void>((r) => (release = r))) as Promise<void>;
  see("after a run whose promise is pending");
  release();
  await pending;

  // Timers fire in the order of their deadlines: had the first not been cleared, it would fire before the second.
  let fired = false;
  clearTimer(setTimer(() => (fired = true), 1));
  await new Promise<void>((resolve) => setTimer(resolve, 2));
  seen["a cleared timer did not fire"] = !fired;
  return seen;
}

export { asyncContextSource };
