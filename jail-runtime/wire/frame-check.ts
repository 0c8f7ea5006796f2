/**
 * The frame checks both sides of the wire share: the bound on a frame, the
 * protocol's error, and a decoded frame checked against its schema in one
 * wording. No msgpack here: the broker decodes with msgpackr (`codec.ts`),
 * the satellite with its own code (`cap/framing.ts`), and an artifact that
 * imported msgpackr would carry it, and pay for it at every boot.
 */
import * as v from "valibot";
import { describeIssues } from "./frames.js";

/** Default bound on one frame's body, enforced by both sides. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

export type ProtocolErrorCode = "frame_too_large" | "malformed_frame" | "truncated_frame" | "unexpected_frame";

/** A violation of the wire protocol: the connection that carried it is closed. */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  constructor(
    readonly code: ProtocolErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A variant of frame schemas by their literal tags (`t`), made once before any
 * frame is read: a frame is checked against the one option its tag names.
 * valibot's variant tries each option's tag in turn, building objects per
 * try (a third of a small frame's check). Plain loops and indexing only: the
 * satellite's copy runs beside extension code, which may have patched methods.
 */
export interface TagIndex {
  readonly key: string;
  readonly tags: readonly unknown[];
  readonly options: readonly v.GenericSchema[];
}

export function tagIndex(
  schema: v.VariantSchema<string, v.VariantOptions<string>, v.ErrorMessage<v.VariantIssue> | undefined>,
): TagIndex {
  const tags: unknown[] = [];
  const options: v.GenericSchema[] = [];
  for (let i = 0; i < schema.options.length; i++) {
    const option = schema.options[i]!;
    const tag = (option as { entries: Record<string, v.GenericSchema> }).entries[schema.key];
    // Only literal tags are indexed; any other option leaves the variant to valibot.
    if (option.type !== "object" || tag?.type !== "literal") return { key: schema.key, tags: [], options: [] };
    tags[i] = (tag as v.LiteralSchema<v.Literal, undefined>).literal;
    options[i] = option;
  }
  return { key: schema.key, tags, options };
}

/** The option of `index` that `raw`'s tag names, or `fallback` (the whole variant, for its error). */
function optionFor(index: TagIndex | undefined, raw: object, fallback: v.GenericSchema): v.GenericSchema {
  if (index === undefined) return fallback;
  const tag = (raw as Record<string, unknown>)[index.key];
  for (let i = 0; i < index.tags.length; i++) if (index.tags[i] === tag) return index.options[i]!;
  return fallback;
}

/**
 * Decodes a frame body with `decode` and checks it against `schema`, in the
 * wording both sides of the wire share. `isArray` is the caller's: the
 * satellite passes one captured before extension code ran.
 */
export function checkFrame<S extends v.GenericSchema>(
  schema: S,
  decode: () => unknown,
  isArray: (value: unknown) => boolean,
  index?: TagIndex,
): v.InferOutput<S> {
  let raw: unknown;
  try {
    raw = decode();
  } catch (err) {
    throw new ProtocolError("malformed_frame", `Frame is not msgpack: ${(err as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || isArray(raw))
    throw new ProtocolError("malformed_frame", "Frame is not a msgpack map");
  const parsed = v.safeParse(optionFor(index, raw, schema), raw);
  if (!parsed.success) {
    const t = (raw as { t?: unknown }).t;
    throw new ProtocolError(
      "malformed_frame",
      `Bad ${typeof t === "string" ? `'${t.slice(0, 32)}' ` : ""}frame: ${describeIssues(parsed.issues)}`,
    );
  }
  return parsed.output;
}
