/**
 * The toy kind `greet`, its broker half: the manifest section `[[greet]]`
 * (each row a name, a description and an optional time limit, checked by its
 * own schema) and the kernel's row (the default one for a named kind: granted
 * rows only, the payload checked first, the row's deadline capped).
 */
import * as v from "valibot";
import type { ExtraKind } from "../../../broker/kernel/kinds.js";
import { Greet } from "./wire.js";

export const GreetSection = v.strictObject({
  name: v.string(),
  description: v.pipe(v.string(), v.maxLength(512)),
  deadline_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000))),
});

export const greetKind: ExtraKind<v.InferOutput<typeof Greet.payload>, v.InferOutput<typeof Greet.answer>> = {
  definition: Greet,
  section: { row: GreetSection, maxRows: 8, sees: "sees the name it greets" },
};
