/**
 * The serving loop: the one call a generated entry makes, after the
 * extension's module has been evaluated.
 *
 * It does not boot: `prelude.ts` did that before any extension code ran (boot
 * token from stdin, connected, socket grants revoked) and handed over the open
 * channel. The loop says hello, then answers `call` frames — each as soon as
 * it arrives, several open at once when the broker sends them — until the
 * broker closes the channel or closes stdin. Everything it calls was
 * captured before the extension ran (`intrinsics.ts`, and the Deno calls the
 * prelude hands over), so an extension's patches to globals do not reach it.
 */
import { ErrorCode } from "../wire/codes.js";
import {
  MAX_OPEN_INVOCATIONS,
  RUNTIME_NAME as WIRE_RUNTIME_NAME,
  type BrokerFrame,
  type Call,
} from "../wire/frames.js";
import type { Answer, Asked } from "../ext/answer.js";
import type { Ctx } from "../ext/ctx.js";
import {
  SafeError,
  SafeString,
  U8,
  arrayIsArray,
  arrayMap,
  arraySlice,
  arraySort,
  jsonStringify,
  logError,
  objectKeys,
  stringSlice,
} from "./intrinsics.js";
import * as invocation from "./invocation.js";
import { act, actBefore } from "./act.js";

/**
 * The runtime's name in `hello`: this runtime and the wire version it speaks.
 *
 * @example
 * ```ts
 * import { RUNTIME_NAME } from "@tether/cap";
 * console.log(RUNTIME_NAME); // "tether-deno/1"
 * ```
 */
export const RUNTIME_NAME: typeof WIRE_RUNTIME_NAME = WIRE_RUNTIME_NAME;

export type Answerer = (asked: Asked, ctx: Ctx) => Promise<Answer>;

/**
 * The open channel as the loop uses it: `channel.ts`'s Channel, named by shape
 * so the SDK's published types never reach the Deno-only connection behind it.
 */
export interface Link extends invocation.CapSink {
  /** Queues a frame without waiting for the write: the encoding error, or null. */
  post(frame: object): Error | null;
  readLoop(onFrame: (frame: BrokerFrame) => void): Promise<void>;
  close(): void;
}

/** What the prelude hands over: the boot token, the open channel, and the Deno calls the loop needs, captured. */
export interface Booted {
  readonly boot: string;
  readonly channel: Link;
  readonly readStdin: (buf: Uint8Array) => Promise<number | null>;
  readonly exit: (code: number) => never;
}

let booted: Booted | null = null;
let taken = false;

/** Called once, by the prelude. Not exported by `@tether/cap`: an extension cannot hand over a channel of its own. */
export function handOver(b: Booted): void {
  if (booted !== null || taken) throw new SafeError("tether satellite: the boot was already handed over");
  booted = b;
}

/** Exits once stdin reaches EOF: the first, politest step of the shutdown ladder. */
async function exitOnStdinEof(b: Booted): Promise<void> {
  const buf = new U8(64);
  while ((await b.readStdin(buf)) !== null) {
    // The broker sends nothing more on stdin; anything else is ignored.
  }
  b.channel.close();
  b.exit(0);
}

/** JSON blocks travel as JSON text (see the wire's JsonBlock). Also the test kit's (`ext/testing/`). */
export function serializeJsonBlocks(value: unknown): Answer {
  const tool = value as { content: Array<{ type: string; json?: unknown }>; terminate: boolean };
  if (!arrayIsArray(tool?.content)) return { ok: true, value };
  try {
    const content = arrayMap(tool.content, (block) =>
      block?.type === "json" ? { type: "json", json: jsonStringify(block.json) ?? "null" } : block,
    );
    return { ok: true, value: { ...tool, content } };
  } catch (err) {
    return {
      ok: false,
      error: { code: ErrorCode.crashed, msg: `A JSON block could not be serialized: ${crashMessage(err)}` },
    };
  }
}

export function crashMessage(err: unknown): string {
  // Name and message only: the stack goes to stderr, which the broker logs.
  if (err instanceof SafeError) return stringSlice(`${err.name}: ${err.message}`, 0, 4096);
  return stringSlice(`Threw a non-error value: ${SafeString(err)}`, 0, 4096);
}

async function runInvocation(channel: Link, call: Call, answerer: Answerer): Promise<void> {
  // The signal and its deadline timer are made only if the extension reads ctx.signal.
  const signal = invocation.begin(call.id, call.token, call.deadline_ms);
  const ctx: Ctx = {
    strand: call.strand,
    deadlineMs: call.deadline_ms,
    get signal() {
      return signal.signal;
    },
    report: (text: string) => invocation.castCap("report.emit", { text: SafeString(text) }),
    act,
    actBefore,
  };
  const asked: Asked = {
    kind: call.kind,
    name: call.name,
    args: call.args,
    strand: call.strand,
    deadlineMs: call.deadline_ms,
  };
  let reply: Answer;
  try {
    reply = await invocation.within(call.id, () => answerer(asked, ctx));
  } catch (err) {
    logError(err);
    reply = { ok: false, error: { code: ErrorCode.crashed, msg: crashMessage(err) } };
  }
  invocation.end(call.id);
  if (reply.ok && (call.kind === "tool" || call.kind === "command")) reply = serializeJsonBlocks(reply.value);
  // Queued, not awaited: the write goes out with whatever else this turn sends.
  const failed = channel.post({ t: "result", id: call.id, ...reply });
  // An answer that cannot be encoded (too large, unencodable value) is still an answer.
  if (failed !== null)
    channel.post({
      t: "result",
      id: call.id,
      ok: false,
      error: { code: ErrorCode.crashed, msg: `Reply could not be sent: ${failed.message}` },
    });
}

function sorted(names: readonly string[]): string[] {
  return arraySort(arraySlice(names));
}

/**
 * Says hello over the channel the prelude opened and serves until it closes.
 * Does not return. Only the first call serves; the prelude must have run.
 *
 * @example
 * ```ts
 * import { answer, outcome, text } from "@tether/ext";
 * const tools = { echo: (args: unknown) => outcome([text(JSON.stringify(args))]) };
 * // What a generated entry does (through `serving` from `@tether/ext`):
 * await serveLoop((asked, ctx) => answer({ tools }, asked, ctx), { tools: ["echo"], hooks: [] });
 * ```
 */
export async function serveLoop(
  answerer: Answerer,
  served: {
    tools: string[];
    hooks: string[];
    commands?: string[];
    contexts?: string[];
    routes?: string[];
    compactions?: string[];
    providers?: string[];
    services?: string[];
    searches?: string[];
    handles?: Array<"prepare" | "close" | "observe" | "init">;
    /** The kinds added beside the built-ins it serves, each with its names. */
    kinds?: Record<string, string[]>;
  },
): Promise<never> {
  const b = booted;
  if (b === null) {
    throw new SafeError(
      taken
        ? "tether satellite: the serving loop is already running"
        : "tether satellite: no boot to serve (the prelude did not run: this artifact was not built by tether install)",
    );
  }
  booted = null;
  taken = true;
  const { channel, exit } = b;
  invocation.attach(channel);
  void exitOnStdinEof(b);
  await channel.send({
    t: "hello",
    boot: b.boot,
    runtime: RUNTIME_NAME,
    tools: sorted(served.tools),
    hooks: sorted(served.hooks),
    commands: sorted(served.commands ?? []),
    contexts: sorted(served.contexts ?? []),
    routes: sorted(served.routes ?? []),
    compactions: sorted(served.compactions ?? []),
    providers: sorted(served.providers ?? []),
    services: sorted(served.services ?? []),
    searches: sorted(served.searches ?? []),
    handles: sorted(served.handles ?? []) as Array<"prepare" | "close" | "observe" | "init">,
    // Sent only when it serves any: a hello without added kinds stays as it was.
    ...(served.kinds !== undefined && objectKeys(served.kinds).length > 0 ? { kinds: served.kinds } : {}),
  });

  try {
    await channel.readLoop((frame) => {
      switch (frame.t) {
        case "call":
          // The broker sends no more than the manifest's concurrency; past the hard bound is its mistake.
          if (invocation.openCount() >= MAX_OPEN_INVOCATIONS || invocation.opened(frame.id) !== null) {
            channel.post({
              t: "result",
              id: frame.id,
              ok: false,
              error: {
                code: ErrorCode.busy,
                msg: `This satellite already has ${MAX_OPEN_INVOCATIONS} invocations open`,
              },
            });
            return;
          }
          void runInvocation(channel, frame, answerer);
          return;
        case "cap_result":
          invocation.settle(frame);
          return;
        case "cancel":
          invocation.opened(frame.id)?.controller.abort(new SafeError("Cancelled by the caller"));
          return;
      }
    });
  } catch (err) {
    logError(`tether satellite: channel failed: ${(err as Error).message}`);
    invocation.failAll("Channel failed");
    return exit(3);
  }
  invocation.failAll("Channel closed");
  return exit(0);
}
