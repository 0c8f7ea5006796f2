/**
 * The console's form bodies: read bounded (`MAX_FORM_BYTES`, counted as the
 * bytes arrive, 413 past it), only as `application/x-www-form-urlencoded`,
 * and each route's fields checked by a valibot schema. A field given twice
 * where one is expected is refused, not guessed at.
 */
import type { IncomingMessage } from "node:http";
import * as v from "valibot";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

/** At most this many bytes of a form body. */
export const MAX_FORM_BYTES = 64 * 1024;

/** Why a form is refused: the status to answer and what to say. */
export class FormError extends Error {
  constructor(
    readonly status: 400 | 408 | 413 | 415,
    message: string,
  ) {
    super(message);
  }
}

/** The form's fields: each name with its values in order. */
export type Fields = ReadonlyMap<string, readonly string[]>;

/** Past this many bytes a refused body is no longer read to its end: the connection is cut. */
const DRAIN_BYTES = 1024 * 1024;

/** How long a form body may take to arrive, by default. */
export const FORM_BODY_MS = 10_000;

/**
 * Reads the request's body, keeping at most `max` bytes: past it the rest is
 * read and dropped (so the client gets its 413 rather than a reset), up to
 * `DRAIN_BYTES`, where the connection is cut. A body not whole within
 * `deadlineMs` (a slow client holding the connection: slowloris) is a 408.
 */
export function readBody(req: IncomingMessage, max = MAX_FORM_BYTES, deadlineMs = FORM_BODY_MS): Promise<Buffer> {
  const tooLarge = () => new FormError(413, `the form is larger than ${max} bytes`);
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > DRAIN_BYTES) {
    req.destroy();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    // One buffer however the browser splits the body (`HeldBytes`); past `max` only counted.
    const held = new HeldBytes(max);
    let size = 0;
    let settled = false;
    const finish = (err: FormError | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off("data", onData);
      if (err !== null) reject(err);
      else resolve(bufferOf(held.view()));
    };
    const timer = setTimeout(
      () => finish(new FormError(408, `the form did not arrive within ${deadlineMs} ms`)),
      deadlineMs,
    );
    timer.unref();
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > DRAIN_BYTES) {
        req.destroy();
        return finish(tooLarge());
      }
      if (size <= max) held.append(chunk);
    };
    req.on("data", onData);
    req.once("end", () => finish(size > max ? tooLarge() : null));
    req.once("error", () => finish(new FormError(400, "the form's body could not be read")));
  });
}

/** The fields of a urlencoded body. */
export function parseFields(body: Buffer): Fields {
  const fields = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(body.toString("utf8"))) {
    const list = fields.get(name);
    if (list === undefined) fields.set(name, [value]);
    else list.push(value);
  }
  return fields;
}

/** Reads and parses a form POST (its content type checked first). */
export async function readForm(req: IncomingMessage, max = MAX_FORM_BYTES, deadlineMs = FORM_BODY_MS): Promise<Fields> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded")
    throw new FormError(415, "the console takes forms as application/x-www-form-urlencoded");
  return parseFields(await readBody(req, max, deadlineMs));
}

/** No control characters (they would be recorded, then shown). */
const printable = v.regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, "must hold no control characters");

const csrf = v.pipe(v.string(), v.minLength(1), v.maxLength(128));
const confirm = v.optional(v.picklist(["yes"]));
/** What the confirmation showed, as its digest (`seenOf`): the action is done only while it still says the same. */
const seen = v.optional(v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, "is not a confirmation's digest")));

/** The login form. */
export const LoginForm = v.object({
  token: v.pipe(v.string(), v.minLength(1, "the token is required"), v.maxLength(1024)),
  operator: v.optional(v.pipe(v.string(), v.trim(), v.maxLength(64, "at most 64 characters"), printable)),
});

/** A form that only needs its CSRF token and, for an action, the confirmation. */
export const ActionForm = v.object({ csrf, confirm, seen });

/**
 * Approve: the rules to grant (the boxes left checked), every one of
 * them a requested rule (checked against the manifest by the registry).
 */
export const ApproveForm = v.object({
  csrf,
  confirm,
  seen,
  rule: v.pipe(v.array(v.pipe(v.string(), v.maxLength(2048), printable)), v.maxLength(256)),
});

/** Which fields of a schema may hold several values. */
const LISTS = new Set(["rule"]);

/** The fields as the schema's input: single fields as strings (twice is an error), list fields as arrays. */
export function fieldsInput(fields: Fields): Record<string, string | string[]> {
  const input: Record<string, string | string[]> = {};
  for (const [name, values] of fields) {
    if (LISTS.has(name)) input[name] = [...values];
    else if (values.length === 1) input[name] = values[0]!;
    else throw new FormError(400, `the field '${name}' was given ${values.length} times`);
  }
  for (const name of LISTS) input[name] ??= [];
  return input;
}

/** The fields checked against `schema`; a FormError (400) naming what is wrong. */
export function parseForm<S extends v.GenericSchema>(schema: S, fields: Fields): v.InferOutput<S> {
  const result = v.safeParse(schema, fieldsInput(fields));
  if (!result.success) {
    const issue = result.issues[0];
    const path = issue?.path?.map((p) => String(p.key)).join(".") ?? "";
    throw new FormError(
      400,
      `${path === "" ? "the form" : `the field '${path}'`}: ${issue?.message ?? "is not valid"}`,
    );
  }
  return result.output;
}
