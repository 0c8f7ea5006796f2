/** The resolver the broker uses unless told another: the system's (getaddrinfo), every address, in its order. */
import { lookup } from "node:dns/promises";
import type { Resolver } from "./judge.js";

export const systemResolver: Resolver = async (name) => {
  const answers = await lookup(name, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};
