/** Test fixture: exports a greeter its manifest does not declare; the hello's served set must not match. */
import type { Greeters } from "../sdk.js";

const greet: Greeters = {
  hello: (payload) => ({ text: `Hi, ${payload.who}` }),
  shout: (payload) => ({ text: `HI, ${payload.who.toUpperCase()}` }),
};

export const kinds = { greet };
