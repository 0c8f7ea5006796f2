/**
 * The part of valibot re-exported to authors as `v`. A curated list rather
 * than `export * as v from "valibot"`: a namespace re-export pulls all of
 * valibot into every artifact (~200 KB), which every boot then parses.
 *
 * @example
 * ```ts
 * import { decodeArgs, v } from "@tether/ext";
 * const { city } = decodeArgs(v.object({ city: v.pipe(v.string(), v.minLength(1)) }), { city: "Lisbon" });
 * ```
 */
export {
  // schemas
  any,
  array,
  bigint,
  boolean,
  date,
  enum_ as enum,
  literal,
  looseObject,
  null_ as null,
  nullable,
  nullish,
  number,
  object,
  optional,
  picklist,
  record,
  strictObject,
  string,
  tuple,
  undefined_ as undefined,
  union,
  unknown,
  variant,
  // pipes and checks
  pipe,
  check,
  transform,
  trim,
  toLowerCase,
  toUpperCase,
  integer,
  minValue,
  maxValue,
  minLength,
  maxLength,
  length,
  regex,
  email,
  url,
  uuid,
  isoDate,
  isoDateTime,
  startsWith,
  endsWith,
  includes,
  nonEmpty,
  // running schemas
  parse,
  safeParse,
  is,
  getDotPath,
} from "valibot";
export type { InferInput, InferOutput, GenericSchema, BaseIssue } from "valibot";
