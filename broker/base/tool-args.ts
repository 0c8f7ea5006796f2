/**
 * Checks a tool call's arguments against the tool's JSON Schema before the
 * call reaches a satellite. Schemas are compiled once per (extension, hash),
 * by the checker of one broker (it owns one: nothing compiled outlives it).
 */
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { ajvClass, ajvLoaded, preloadAjv } from "./ajv.js";
import { CALLER_JSON_BOUNDS, DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { jsonSyntaxError } from "./json-syntax.js";

function where(err: ErrorObject): string {
  const path = err.instancePath.replace(/\//g, ".").replace(/~1/g, "/").replace(/~0/g, "~");
  return path === "" ? "" : ` at ${path}`;
}

function describe(err: ErrorObject): string {
  switch (err.keyword) {
    case "type":
      return `expected ${String(err.params.type)}${where(err)}`;
    case "required":
      // Named in words: `missing property 'text'`, and where, when not at the top.
      return `missing property '${String(err.params.missingProperty)}'${where(err)}`;
    case "additionalProperties":
      return `unexpected field ${String(err.params.additionalProperty)}${where(err) || " at ."}`;
    default:
      return `${err.message ?? "invalid"}${where(err)}`;
  }
}

export type ArgsCheck = { ok: true } | { ok: false; msg: string };

/** The key a tool's parameters schema is compiled under: its manifest's hash and its name. */
export function toolArgsKey(manifestHash: string, tool: string): string {
  return `${manifestHash}:${tool}`;
}

/** A schema to compile ahead of its first check, under its key. */
export interface SchemaToCompile {
  readonly key: string;
  readonly schema: object;
}

/** A broker's tool-argument checker: its own Ajv and the schemas it compiled. */
export class ToolArgsChecker {
  /**
   * Schemas are not checked against JSON Schema's meta-schema here: install did that
   * (install/manifest-checks.ts) before the manifest could be approved. Compiling the
   * meta-schema was ~32 ms of a fresh process's first call.
   */
  #ajv: Ajv | null = null;
  readonly #compiled = new Map<string, ValidateFunction>();
  /**
   * The last check: a hooked call checks the caller's arguments before its hooks
   * are asked, and the kernel checks the same text again before the tool runs.
   */
  #lastKey: string | null = null;
  #lastArgs: string | null = null;
  #lastAnswer: ArgsCheck = { ok: true };

  /**
   * Loads Ajv without blocking (a session's open does while its satellites boot); settles when it is
   * loaded. A check before then loads it on the spot, from node_modules rather than the command's bundle.
   */
  load(): Promise<void> {
    return preloadAjv().then(() => {
      // Its instance too (~4 ms of Ajv's own set-up), so the first check only compiles; never rejects
      // (a session's open does not wait for it): should the instance fail, the first check says why.
      try {
        if (ajvLoaded()) this.#instance();
      } catch {
        // reported by the first check, which makes it again
      }
    });
  }

  /**
   * Compiles `schemas` ahead of their first check, one an event-loop turn once Ajv is loaded, until
   * `until` settles: a session's open asks it for the tools it activates, while their satellites boot
   * and the broker mostly waits. The first compile of a process, Ajv's own code still cold, was ~4–6 ms
   * of a session's first call. What `until` leaves uncompiled is compiled at its first check, as before.
   */
  precompile(schemas: readonly SchemaToCompile[], until: Promise<unknown>): void {
    let over = false;
    until.then(
      () => (over = true),
      () => (over = true),
    );
    let next = 0;
    const step = () => {
      if (over || next >= schemas.length) return;
      const { key, schema } = schemas[next++]!;
      if (!this.#compiled.has(key)) {
        try {
          this.#compiled.set(key, this.#instance().compile(schema));
        } catch {
          // Compiled again at its first check, which reports why it cannot be.
        }
      }
      setImmediate(step);
    };
    void this.load().then(() => setImmediate(step)); // load() never rejects
  }

  /** Whether the schema under `key` is compiled already. */
  compiled(key: string): boolean {
    return this.#compiled.has(key);
  }

  #instance(): Ajv {
    this.#ajv ??= new (ajvClass())({ allErrors: true, strict: false, validateSchema: false });
    return this.#ajv;
  }

  /** Checks `args` (JSON text) against `schema`; `cacheKey` identifies the schema. */
  check(cacheKey: string, schema: object, args: string): ArgsCheck {
    // Three fields, not a record: every call checks once, and only a hooked call asks twice.
    if (args === this.#lastArgs && cacheKey === this.#lastKey) return this.#lastAnswer;
    const answer = this.#check(cacheKey, schema, args);
    this.#lastKey = cacheKey;
    this.#lastArgs = args;
    this.#lastAnswer = answer;
    return answer;
  }

  #check(cacheKey: string, schema: object, args: string): ArgsCheck {
    let value: unknown;
    try {
      value = parseBoundedJson(args, CALLER_JSON_BOUNDS);
    } catch (err) {
      if (err instanceof DocumentBoundsError)
        return { ok: false, msg: `Arguments are ${err.message} (the bound for any JSON document)` };
      const at = jsonSyntaxError(args);
      return { ok: false, msg: at === null ? "Arguments are not JSON" : `Arguments are not JSON: ${at.message}` };
    }
    let validate = this.#compiled.get(cacheKey);
    if (validate === undefined) {
      validate = this.#instance().compile(schema);
      this.#compiled.set(cacheKey, validate);
    }
    if (validate(value)) return { ok: true };
    return { ok: false, msg: (validate.errors ?? []).map(describe).join("; ") };
  }
}
