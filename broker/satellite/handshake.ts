/**
 * The boot handshake's checks: the served set a satellite's hello names must
 * be exactly what its manifest declares; and how a process's exit reads in a
 * message.
 */
import type { Hello } from "../../jail-runtime/wire/frames.js";
import { BrokerCode, TetherError } from "../base/errors.js";

/** What the approved manifest declares; the hello must match exactly. */
export interface Declared {
  readonly tools: readonly string[];
  readonly hooks: readonly string[];
  readonly commands?: readonly string[];
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = [...new Set(a)].sort();
  const sb = [...new Set(b)].sort();
  return a.length === sa.length && sa.length === sb.length && sa.every((x, i) => x === sb[i]);
}

function list(names: readonly string[]): string {
  return `[${[...names].sort().join(", ")}]`;
}

/** Throws `servedMismatch` unless the hello serves exactly the declared tools, hooks and commands. */
export function checkServed(name: string, declared: Declared, hello: Hello): void {
  const { tools, hooks } = declared;
  const commands = declared.commands ?? [];
  if (!sameSet(hello.tools, tools) || !sameSet(hello.hooks, hooks) || !sameSet(hello.commands, commands)) {
    const cmds = (names: readonly string[]) => (names.length > 0 || commands.length > 0 ? ` and commands ${list(names)}` : "");
    throw new TetherError(
      BrokerCode.servedMismatch,
      `Extension '${name}' is broken: the manifest declares tools ${list(tools)} and hooks ${list(hooks)}${cmds(commands)}, ` +
        `but the artifact serves tools ${list(hello.tools)} and hooks ${list(hello.hooks)}${cmds(hello.commands)}. Reinstall it`,
    );
  }
}

/** A process's exit as a message fragment ("exited with code 1"). */
export function describeExit(code: number | undefined, signal: string | undefined, memoryMb: number): string {
  // V8 aborts with SIGTRAP (exit 133) when --max-old-space-size is exceeded.
  if (code === 133 || signal === "SIGTRAP") return `ran out of memory (limit ${memoryMb} MiB) and exited`;
  return signal ? `exited with signal ${signal}` : `exited with code ${code}`;
}
