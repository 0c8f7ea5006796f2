/**
 * fast-check arbitraries for the wire: valid frames of every kind, shaped by
 * the bounds in `jail-runtime/wire/frames.ts`.
 */
import fc from "fast-check";
import type * as v from "valibot";
import { encodeFrame } from "../../../jail-runtime/wire/codec.js";
import {
  BrokerFrame,
  CallKind,
  SatelliteFrame,
  type BrokerFrame as BrokerFrameT,
  type SatelliteFrame as SatelliteFrameT,
} from "../../../jail-runtime/wire/frames.js";

/** An invocation or capability id: any safe non-negative integer. */
export const wireId = fc.maxSafeNat();

/**
 * Well-formed strings (no lone surrogates) within a UTF-16 length bound: a
 * `binary` unit is one code point, at most two UTF-16 units.
 */
export function wireString(maxUtf16: number): fc.Arbitrary<string> {
  return fc.string({ unit: "binary", maxLength: Math.floor(maxUtf16 / 2) });
}

/** Fits `Name` (at most 256 UTF-16 units). */
export const wireName = wireString(256);
/** Fits `Token` (at most 128 UTF-16 units). */
export const wireToken = wireString(128);

/**
 * JSON values as they travel in `args`/`value` fields. `-0` is normalised to `0`
 * (msgpack has one integer zero) and keys named `__proto__` are left out here:
 * the codec renames them, which `codec.test.ts` pins separately.
 */
export const wireJson: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 3 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
  .filter((value) => !JSON.stringify(value).includes('"__proto__"'));

export const wireError = fc.record({ code: wireName, msg: wireString(2048) }, { noNullPrototype: true });

const contentBlock = fc.oneof(
  fc.record({ type: fc.constant("text" as const), text: wireString(512) }, { noNullPrototype: true }),
  fc.record({ type: fc.constant("json" as const), json: fc.json({ maxDepth: 3 }) }, { noNullPrototype: true }),
);

/** A tool's value: `{content, terminate}`. */
export const toolValue = fc.record(
  { content: fc.array(contentBlock, { maxLength: 4 }), terminate: fc.boolean() },
  { noNullPrototype: true },
);

export const helloFrame = fc.record(
  {
    t: fc.constant("hello" as const),
    boot: wireToken,
    runtime: wireName,
    tools: fc.array(wireName, { maxLength: 6 }),
    hooks: fc.array(wireName, { maxLength: 6 }),
    commands: fc.array(wireName, { maxLength: 6 }),
    contexts: fc.array(wireName, { maxLength: 3 }),
    routes: fc.array(wireName, { maxLength: 3 }),
    compactions: fc.array(wireName, { maxLength: 3 }),
    providers: fc.array(wireName, { maxLength: 3 }),
    services: fc.array(wireName, { maxLength: 3 }),
    searches: fc.array(wireName, { maxLength: 3 }),
    handles: fc.subarray(["prepare" as const, "close" as const, "observe" as const, "init" as const]),
  },
  { noNullPrototype: true },
);

export const callFrame = fc.record(
  {
    t: fc.constant("call" as const),
    id: wireId,
    token: wireToken,
    kind: fc.constantFrom(...CallKind.options),
    name: wireName,
    args: fc.oneof(fc.json({ maxDepth: 3 }), wireString(256)),
    strand: wireString(64),
    deadline_ms: wireId,
  },
  { noNullPrototype: true },
);

export const capFrame = fc.record(
  { t: fc.constant("cap" as const), id: wireId, token: wireToken, cap: wireName, args: fc.json({ maxDepth: 3 }) },
  { noNullPrototype: true },
);

export const capResultFrame = fc.record(
  { t: fc.constant("cap_result" as const), id: wireId, ok: fc.boolean(), value: wireJson, error: wireError },
  { requiredKeys: ["t", "id", "ok"], noNullPrototype: true },
);

export const resultFrame = fc.record(
  {
    t: fc.constant("result" as const),
    id: wireId,
    ok: fc.boolean(),
    value: fc.oneof(toolValue, wireString(256), wireJson),
    error: wireError,
  },
  { requiredKeys: ["t", "id", "ok"], noNullPrototype: true },
);

export const cancelFrame = fc.record({ t: fc.constant("cancel" as const), id: wireId }, { noNullPrototype: true });

export const satelliteFrame: fc.Arbitrary<SatelliteFrameT> = fc.oneof(helloFrame, capFrame, resultFrame);
export const brokerFrame: fc.Arbitrary<BrokerFrameT> = fc.oneof(callFrame, capResultFrame, cancelFrame);

/** A frame of either direction with the schema its receiver decodes it by. */
export interface Directed {
  readonly frame: SatelliteFrameT | BrokerFrameT;
  readonly schema: v.GenericSchema;
}

export const anyFrame: fc.Arbitrary<Directed> = fc.oneof(
  satelliteFrame.map((frame): Directed => ({ frame, schema: SatelliteFrame })),
  brokerFrame.map((frame): Directed => ({ frame, schema: BrokerFrame })),
);

/** Concatenates byte arrays. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Encodes frames back to back, as one stream. */
export function encodeStream(frames: readonly Directed[]): Uint8Array {
  return concat(frames.map(({ frame }) => encodeFrame(frame)));
}

/** Cuts `bytes` at the given positions (taken modulo its length + 1, deduplicated). */
export function splitAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const to of [...points, bytes.length]) {
    if (to > from) pieces.push(bytes.subarray(from, to));
    from = Math.max(from, to);
  }
  return pieces;
}
