/** Test fixture: the toy kind `greet` served through the SDK's generic `kinds` export. */
import type { Greeters } from "../sdk.js";

const greet = {
  hello: (payload) => ({ text: `Hello, ${payload.who}` }),
  // Malformed on purpose: the broker checks the answer against the kind's schema.
  mumble: () => ({ text: 42 }) as unknown as { text: string },
} satisfies Greeters;

export const kinds = { greet };
