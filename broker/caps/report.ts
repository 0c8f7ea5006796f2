/** `report.emit`: partials to the caller, best effort, rate-bounded. */
import * as v from "valibot";
import { WireCode } from "../base/errors.js";
import type { CallScope } from "./context.js";
import { refusal, type Act } from "./pipeline.js";
import { MAX_TEXT, type Rate } from "./rate.js";

export const REPORTS_PER_SECOND = 50;
export const ReportArgs = v.object({ text: v.pipe(v.string(), v.maxLength(65_536)) });

export function reportAct(scope: CallScope, args: v.InferOutput<typeof ReportArgs>, rate: Rate): Act<null> {
  return {
    judge: () =>
      rate.take()
        ? null
        : refusal(
            WireCode.denied,
            "rate:report",
            `report.emit: more than ${REPORTS_PER_SECOND} partials a second; this one was dropped`,
          ),
    shown: () => null,
    perform: () => {
      scope.info.report(args.text.slice(0, MAX_TEXT));
      return { reply: { ok: true }, decision: "allowed", rule: "builtin:report", target: "", bytes: args.text.length };
    },
  };
}
