/**
 * The invocation kinds as both programs know them, one definition each.
 *
 * `BUILTIN_KINDS` is the broker's own kinds: per kind, how a satellite's
 * answer travels (a tool value's content blocks, or JSON text) and which
 * field of its `hello` names what it serves of the kind. `CallKind` (the
 * wire's picklist, ./frames.ts) is this table's keys.
 *
 * A kind added beside them is a `KindDefinition` (`defineKind`): its name,
 * its payload's and its answer's valibot schemas. It travels as JSON text,
 * both ways; its satellite's `hello` names what it serves of it under
 * `kinds[<name>]`; a `call` frame names it `+<name>`; the broker checks the payload before it asks and the
 * answer when it comes back (a malformed one is `crashed`). The broker takes
 * such kinds at construction (broker/kernel/kinds.ts, `ExtraKind`) and the
 * SDK serves them generically (`serving({ kinds: { <name>: { … } } })`).
 */
import * as v from "valibot";

/** How a kind's successful answer travels in a `result` frame. */
export type AnswerForm = "tool_value" | "json_text";

/** A hello field that names what a satellite serves (`handles`: the session handlers it exports). */
export type ServedField =
  | "tools"
  | "hooks"
  | "commands"
  | "contexts"
  | "routes"
  | "compactions"
  | "providers"
  | "services"
  | "searches"
  | "handles";

export interface BuiltinKind {
  readonly answer: AnswerForm;
  readonly served: ServedField;
}

/** Every kind the broker asks of its own, as the wire carries it. */
export const BUILTIN_KINDS = {
  tool: { answer: "tool_value", served: "tools" },
  event: { answer: "json_text", served: "hooks" },
  command: { answer: "tool_value", served: "commands" },
  context: { answer: "json_text", served: "contexts" },
  prepare: { answer: "json_text", served: "handles" },
  close: { answer: "json_text", served: "handles" },
  observe: { answer: "json_text", served: "handles" },
  route: { answer: "json_text", served: "routes" },
  compact: { answer: "json_text", served: "compactions" },
  complete: { answer: "json_text", served: "providers" },
  service: { answer: "json_text", served: "services" },
  init: { answer: "json_text", served: "handles" },
  search: { answer: "json_text", served: "searches" },
} as const satisfies Readonly<Record<string, BuiltinKind>>;

export type BuiltinKindName = keyof typeof BUILTIN_KINDS;
export const BUILTIN_KIND_NAMES = Object.keys(BUILTIN_KINDS) as [BuiltinKindName, ...BuiltinKindName[]];

/** Whether `kind` is one of the broker's own. */
export function isBuiltinKind(kind: string): kind is BuiltinKindName {
  return Object.hasOwn(BUILTIN_KINDS, kind);
}

/** Names no added kind may take: the kernel's `boot` (a session starting an extension's satellite). */
export const RESERVED_KIND_NAMES: readonly string[] = ["boot"];

/** A kind's name as a frame carries it: a lowercase word. */
export const KindWord = v.pipe(
  v.string(),
  v.regex(/^[a-z][a-z0-9_]{0,31}$/, "expected a kind name (a-z, 0-9 and _, at most 32, starting with a letter)"),
);

/**
 * How an added kind travels in a `call` frame: its name after `+` (`+greet`),
 * so that no added kind passes for a built-in one and an unknown bare word is
 * still refused as before.
 */
export const ADDED_KIND_MARK = "+";
export const AddedKindOnWire = v.pipe(
  v.string(),
  v.regex(/^\+[a-z][a-z0-9_]{0,31}$/, "expected an added kind: + and its name (a-z, 0-9 and _, at most 32)"),
);

/** The kind as a call frame names it: a built-in one as it is, an added one marked. */
export function kindOnWire(kind: string): string {
  return isBuiltinKind(kind) ? kind : `${ADDED_KIND_MARK}${kind}`;
}

/** An added kind's name from a call frame's `kind` (undefined for a built-in one). */
export function addedKindOf(wireKind: string): string | undefined {
  return wireKind.startsWith(ADDED_KIND_MARK) ? wireKind.slice(ADDED_KIND_MARK.length) : undefined;
}

/** A kind added beside the built-ins, by name: a lowercase word that is not a built-in's. */
export const ExtraKindName = v.pipe(
  KindWord,
  v.check(
    (name) => !isBuiltinKind(name) && !RESERVED_KIND_NAMES.includes(name),
    "expected a kind that is not a built-in one",
  ),
);

/** The most added kinds a hello may name. */
export const MAX_EXTRA_KINDS = 32;
/** The most JSON text an added kind's payload or answer may be: 1 MiB. */
export const MAX_KIND_JSON = 1024 * 1024;

const Name = v.pipe(v.string(), v.maxLength(256));

/** What a hello says it serves of the added kinds: per kind, its names. */
export const ServedKinds = v.pipe(
  v.record(ExtraKindName, v.pipe(v.array(Name), v.maxLength(1024))),
  v.check((k) => Object.keys(k).length <= MAX_EXTRA_KINDS, `expected at most ${MAX_EXTRA_KINDS} kinds`),
);
export type ServedKinds = v.InferOutput<typeof ServedKinds>;

/** One added kind, shared by the broker (to check) and the extension's SDK half (to type its handlers). */
export interface KindDefinition<P = unknown, A = unknown> {
  /** Its name on the wire (`call.kind`), and the manifest section that declares its rows (`[[<name>]]`). */
  readonly name: string;
  /** What the broker hands the satellite; checked before it is asked (`bad_arguments` otherwise). */
  readonly payload: v.GenericSchema<unknown, P>;
  /** What the satellite answers; checked when it comes back (`crashed` otherwise). */
  readonly answer: v.GenericSchema<unknown, A>;
}

/** What an added kind's handler is handed, and what it answers. */
export type KindPayload<D> = D extends KindDefinition<infer P, unknown> ? P : never;
export type KindAnswer<D> = D extends KindDefinition<unknown, infer A> ? A : never;

/** A kind definition, its name checked (a built-in's name, or a malformed one, throws). */
export function defineKind<P, A>(definition: KindDefinition<P, A>): KindDefinition<P, A> {
  const named = v.safeParse(ExtraKindName, definition.name);
  if (!named.success) throw new Error(`kind '${definition.name}': ${named.issues[0].message}`);
  return definition;
}

/** Any kind a call may name: a built-in one, or one added by name. */
export type AnyKind = BuiltinKindName | (string & {});
