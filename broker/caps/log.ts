/** `log`: a line in the broker's log under the extension's name, rate-bounded. */
import * as v from "valibot";
import { WireCode } from "../base/errors.js";
import type { CallScope } from "./context.js";
import { refusal, type Act } from "./pipeline.js";
import { MAX_TEXT, type Rate } from "./rate.js";

export const LOGS_PER_SECOND = 20;
export const LogArgs = v.object({
  level: v.optional(v.picklist(["debug", "info", "warn", "error"]), "info"),
  msg: v.pipe(v.string(), v.maxLength(65_536)),
});

export function logAct(scope: CallScope, args: v.InferOutput<typeof LogArgs>, rate: Rate): Act<null> {
  return {
    judge: () =>
      rate.take()
        ? null
        : refusal(WireCode.denied, "rate:log", `log: more than ${LOGS_PER_SECOND} lines a second; dropped`),
    shown: () => null,
    perform: () => {
      // Control characters escaped: an extension cannot forge a broker log line.
      const line = args.msg
        .slice(0, MAX_TEXT)
        .replace(
          /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
        );
      const { info, ctx, env } = scope;
      env.log[args.level](`[${info.extension}] ${line}`, { extension: info.extension, session: ctx.sessionId });
      ctx.onLog?.(args.level, line);
      return { reply: { ok: true }, decision: "allowed", rule: "builtin:log", target: "", bytes: args.msg.length };
    },
  };
}
