/** `report.emit`: partials to the caller, best effort, rate-bounded. */
import * as v from "valibot";
import { WireCode } from "../errors.js";
import type { CapReply } from "../satellite/process.js";
import type { CallScope } from "./context.js";
import { MAX_TEXT, Rate } from "./rate.js";

export const REPORTS_PER_SECOND = 50;
export const ReportArgs = v.object({ text: v.pipe(v.string(), v.maxLength(65_536)) });

export function reportHandler(): (scope: CallScope, args: v.InferOutput<typeof ReportArgs>) => Promise<CapReply> {
  const rate = new Rate(REPORTS_PER_SECOND);
  return async (scope, args) => {
    if (!rate.take()) return { ok: false, error: { code: WireCode.denied, msg: `report.emit: more than ${REPORTS_PER_SECOND} partials a second; this one was dropped (rule: rate:report)` } };
    scope.info.report(args.text.slice(0, MAX_TEXT));
    scope.audit("allowed", "builtin:report", "", args.text.length);
    return { ok: true };
  };
}
