/**
 * Boot and the serving loop: the one call a generated entry makes.
 *
 * Boot reads the token from stdin (never argv or the environment, so it is not
 * in the process list), connects to the socket named in argv, and says hello.
 * Then it answers `call` frames one at a time until the broker closes the
 * channel or closes stdin.
 */
import { ErrorCode } from "../wire/codes.js";
import type { Call } from "../wire/frames.js";
import type { Answer, Asked } from "../ext/answer.js";
import type { Ctx } from "../ext/ctx.js";
import { Channel } from "./channel.js";
import * as invocation from "./invocation.js";

/**
 * The runtime's name in `hello`.
 *
 * @example
 * ```ts
 * import { RUNTIME_NAME } from "@tether/cap";
 * console.log(RUNTIME_NAME); // "tether-deno/1"
 * ```
 */
export const RUNTIME_NAME = "tether-deno/1";

export type Answerer = (asked: Asked, ctx: Ctx) => Promise<Answer>;

async function readBootToken(): Promise<string> {
  const buf = new Uint8Array(256);
  let text = "";
  while (!text.includes("\n")) {
    const n = await Deno.stdin.read(buf);
    if (n === null) break;
    text += new TextDecoder().decode(buf.subarray(0, n));
  }
  return text.split("\n")[0]!.trim();
}

/** Exits once stdin reaches EOF: the first, politest step of the shutdown ladder. */
async function exitOnStdinEof(channel: Channel): Promise<void> {
  const buf = new Uint8Array(64);
  while ((await Deno.stdin.read(buf)) !== null) {
    // The broker sends nothing more on stdin; anything else is ignored.
  }
  channel.close();
  Deno.exit(0);
}

/** JSON blocks travel as JSON text (see the wire's JsonBlock). */
function serializeJsonBlocks(value: unknown): Answer {
  const tool = value as { content: Array<{ type: string; json?: unknown }>; terminate: boolean };
  if (!Array.isArray(tool?.content)) return { ok: true, value };
  try {
    const content = tool.content.map((block) => (block?.type === "json" ? { type: "json", json: JSON.stringify(block.json) ?? "null" } : block));
    return { ok: true, value: { ...tool, content } };
  } catch (err) {
    return { ok: false, error: { code: ErrorCode.crashed, msg: `A JSON block could not be serialized: ${crashMessage(err)}` } };
  }
}

function crashMessage(err: unknown): string {
  // Name and message only: the stack goes to stderr, which the broker logs.
  if (err instanceof Error) return `${err.name}: ${err.message}`.slice(0, 4096);
  return `Threw a non-error value: ${String(err)}`.slice(0, 4096);
}

async function runInvocation(channel: Channel, call: Call, answerer: Answerer): Promise<void> {
  const controller = invocation.begin(call.id, call.token);
  const timer = setTimeout(() => controller.abort(new Error("Deadline passed")), call.deadline_ms);
  const ctx: Ctx = {
    strand: call.strand,
    deadlineMs: call.deadline_ms,
    signal: controller.signal,
    report: (text: string) => invocation.castCap("report.emit", { text: String(text) }),
  };
  let reply: Answer;
  try {
    reply = await answerer({ kind: call.kind, name: call.name, args: call.args, strand: call.strand, deadlineMs: call.deadline_ms }, ctx);
  } catch (err) {
    console.error(err);
    reply = { ok: false, error: { code: ErrorCode.crashed, msg: crashMessage(err) } };
  } finally {
    clearTimeout(timer);
  }
  invocation.end(call.id);
  if (reply.ok && (call.kind === "tool" || call.kind === "command")) reply = serializeJsonBlocks(reply.value);
  await channel.send({ t: "result", id: call.id, ...reply }).catch((err: Error) => {
    // An answer that cannot be encoded (too large, unencodable value) is still an answer.
    return channel.send({ t: "result", id: call.id, ok: false, error: { code: ErrorCode.crashed, msg: `Reply could not be sent: ${err.message}` } });
  });
}

/**
 * Boots the satellite and serves until the channel closes. Does not return.
 *
 * @example
 * ```ts
 * // What a generated entry does (authors call `serving` from `@tether/ext`):
 * await serveLoop((asked, ctx) => answer({ tools }, asked, ctx), { tools: ["echo"], hooks: [] });
 * ```
 */
export async function serveLoop(answerer: Answerer, served: { tools: string[]; hooks: string[]; commands?: string[] }): Promise<never> {
  const socketPath = Deno.args[0];
  if (socketPath === undefined) {
    console.error("tether satellite: no socket path given");
    Deno.exit(2);
  }
  const boot = await readBootToken();
  const channel = await Channel.open(socketPath);
  // Connected: the three socket grants are no longer needed; drop them so
  // nothing here can unlink, chmod or re-listen on the path.
  for (const name of ["net", "read", "write"] as const) {
    try {
      Deno.permissions.revokeSync({ name });
    } catch {
      // best effort: the OS sandbox confines the path either way
    }
  }
  invocation.attach(channel);
  void exitOnStdinEof(channel);
  await channel.send({ t: "hello", boot, runtime: RUNTIME_NAME, tools: [...served.tools].sort(), hooks: [...served.hooks].sort(), commands: [...(served.commands ?? [])].sort() });

  let busy = false;
  try {
    await channel.readLoop((frame) => {
      switch (frame.t) {
        case "call":
          if (busy) {
            void channel.send({ t: "result", id: frame.id, ok: false, error: { code: ErrorCode.busy, msg: "Another invocation is open on this satellite" } });
            return;
          }
          busy = true;
          void runInvocation(channel, frame, answerer).finally(() => {
            busy = false;
          });
          return;
        case "cap_result":
          invocation.settle(frame);
          return;
        case "cancel": {
          const open = invocation.current();
          if (open?.id === frame.id) open.controller.abort(new Error("Cancelled by the caller"));
          return;
        }
      }
    });
  } catch (err) {
    console.error(`tether satellite: channel failed: ${(err as Error).message}`);
    invocation.failAll("Channel failed");
    Deno.exit(3);
  }
  invocation.failAll("Channel closed");
  Deno.exit(0);
}
