/**
 * The toy kind `greet`, its wire half: what the broker hands a greeter and
 * what it answers, one definition for both sides (jail-runtime/wire/kinds.ts).
 */
import * as v from "valibot";
import { defineKind } from "../../../jail-runtime/wire/kinds.js";

export const Greet = defineKind({
  name: "greet",
  payload: v.strictObject({ who: v.pipe(v.string(), v.minLength(1), v.maxLength(64)) }),
  answer: v.strictObject({ text: v.pipe(v.string(), v.maxLength(256)) }),
});
