/**
 * MCP over stdio, as the SDK's `StdioServerTransport` frames it: one JSON-RPC
 * message per line (newline-delimited JSON, a trailing `\r` dropped) on stdin,
 * the answers likewise on stdout. Unlike the SDK's (which buffers up to 10 MiB
 * and then closes), a line is bounded while it is read (MAX_LINE_BYTES, as a
 * request body over HTTP): one past it is refused (`onerror`) and skipped,
 * and the connection goes on. Each line is parsed within CALLER_JSON_BOUNDS
 * (the bounds of every caller's JSON, as `tether serve`'s messages and an
 * HTTP body): a request past them is answered -32602 naming the bound, for
 * its id when one can be read (salvage.ts), so its client is not left
 * waiting; a line that is not JSON is said (`onerror`) and skipped, never
 * answered, as the SDK's transport does.
 */
import type { Readable, Writable } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import {
  CALLER_JSON_BOUNDS,
  DocumentBoundsError,
  parseBoundedJson,
} from "../../../jail-runtime/wire/document-bounds.js";
import { ErrorCode } from "./error-codes.js";
import { MAX_BODY_BYTES } from "../http-gate.js";
import { BoundedLines } from "./lines.js";
import { requestIdOf } from "./salvage.js";
import type { Transport } from "./transport.js";

/** The longest message line read (bytes, without its newline): what an HTTP request's body may be. */
export const MAX_LINE_BYTES = MAX_BODY_BYTES;

export class StdioTransport implements Transport {
  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #lines: BoundedLines;
  readonly #maxLineBytes: number;
  #started = false;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(stdin: Readable = process.stdin, stdout: Writable = process.stdout, maxLineBytes = MAX_LINE_BYTES) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#maxLineBytes = maxLineBytes;
    // One byte more is read: a trailing `\r` is the newline's (`\r\n`), not the line's (#line).
    this.#lines = new BoundedLines(
      maxLineBytes + 1,
      (bytes) => this.#line(bytes),
      () => this.#tooLong(),
    );
  }

  #tooLong(): void {
    this.onerror?.(
      new Error(`a message line longer than ${this.#maxLineBytes} bytes was refused (the bound for one message)`),
    );
  }

  readonly #ondata = (chunk: Buffer | string) => {
    this.#lines.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  };

  readonly #onerror = (error: Error) => this.onerror?.(error);

  #line(bytes: Buffer): void {
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    if (end > this.#maxLineBytes) return this.#tooLong();
    const text = bytes.toString("utf8", 0, end);
    let message: unknown;
    try {
      message = parseBoundedJson(text, CALLER_JSON_BOUNDS);
    } catch (err) {
      this.onerror?.(err as Error);
      const id = err instanceof DocumentBoundsError ? requestIdOf(text) : undefined;
      if (id !== undefined)
        this.send({
          jsonrpc: "2.0",
          id,
          error: {
            code: ErrorCode.InvalidParams,
            message: `Invalid params: the message is ${(err as Error).message} (the bound for any JSON document)`,
          },
        }).catch((sendErr: unknown) => this.onerror?.(sendErr as Error));
      return;
    }
    try {
      this.onmessage?.(message as JSONRPCMessage);
    } catch (err) {
      this.onerror?.(err as Error);
    }
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error("StdioTransport already started (connect() starts it)");
    this.#started = true;
    this.#stdin.on("data", this.#ondata);
    this.#stdin.on("error", this.#onerror);
  }

  async close(): Promise<void> {
    this.#stdin.off("data", this.#ondata);
    this.#stdin.off("error", this.#onerror);
    // Paused only when nothing else reads it.
    if (this.#stdin.listenerCount("data") === 0) this.#stdin.pause();
    this.#lines.clear();
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.#stdout.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.#stdout.once("drain", resolve);
    });
  }
}
