import { callCap } from "@tether/cap";
import { decodeArgs, outcome, text, v, type Outcome, type Tool } from "@tether/ext";

const Ms = v.object({ ms: v.optional(v.pipe(v.number(), v.integer()), 60_000) });
const Mb = v.object({ mb: v.optional(v.pipe(v.number(), v.integer()), 4) });
const Kb = v.object({ kb: v.optional(v.pipe(v.number(), v.integer()), 64) });

export const tools: Record<string, Tool> = {
  throw: () => {
    throw new Error("boom, as asked");
  },
  loop: () => {
    for (;;) {
      // blocks the event loop: only the broker's deadline ends this
    }
  },
  sleep: async (args, ctx) => {
    const { ms } = decodeArgs(Ms, args);
    const aborted = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    return outcome([text(aborted ? "aborted" : `slept ${ms} ms`)]);
  },
  bomb: () => {
    const hoard: number[][] = [];
    for (;;) hoard.push(new Array(1_000_000).fill(hoard.length));
  },
  spew: (args) => {
    const { mb } = decodeArgs(Mb, args);
    const line = "x".repeat(1023);
    for (let i = 0; i < mb * 1024; i++) {
      console.log(line);
      console.error(line);
    }
    return outcome([text(`wrote ${mb} MiB to each stream`)]);
  },
  garbage: async () => {
    // A capability name past the wire's 256-character bound: the frame is invalid.
    await callCap("x".repeat(10_000), null);
    return outcome([text("the broker accepted garbage")]);
  },
  bad_value: () => ({ content: "not a list", terminate: "maybe" }) as unknown as Outcome,
  cap_later: () => {
    setTimeout(() => {
      callCap("kv.get", { key: "after" }).then(
        () => console.log("cap_later: served (wrong)"),
        (err: Error & { code?: string }) => console.log(`cap_later: refused ${err.code}`),
      );
    }, 20);
    return outcome([text("answered; a capability call follows")]);
  },
  wedge: () => {
    Deno.addSignalListener("SIGTERM", () => {});
    setTimeout(() => {
      for (;;) {
        // wedged: neither stdin EOF nor SIGTERM is ever handled
      }
    }, 50);
    return outcome([text("wedged")]);
  },
  exit: () => {
    Deno.exit(7);
  },
  big: (args) => {
    const { kb } = decodeArgs(Kb, args);
    return outcome([text("y".repeat(kb * 1024))]);
  },
};
