/**
 * The built-ins the satellite runtime calls, captured when this module is
 * evaluated. In an artifact that is before any extension code runs: the
 * generated entry imports `prelude.ts` first, and the prelude imports this.
 * An extension may then patch globals and prototypes (JSON, Promise.prototype,
 * Uint8Array.prototype, TextEncoder.prototype …) for itself; the runtime keeps
 * calling these originals, so its frames, its dispatch and its channel are not
 * changed by that. (Deno's own wrappers of its socket reads and writes look up
 * `Function.prototype.call` when called, so a patch there sees the channel's
 * bytes: all of them the extension's own. What protects anything is the
 * broker, which judges every frame; this keeps an extension's patches from
 * breaking its runtime by accident.)
 *
 * A method is kept uncurried — `u8Set(bytes, src, at)` for `bytes.set(src, at)` —
 * as a bound function, which looks nothing up when it is called.
 *
 * Plain JavaScript and web built-ins only (Node runs this file too, in unit
 * tests), and the async context (Deno's core variable, or Node's
 * `AsyncLocalStorage`); the Deno APIs are captured by the prelude itself.
 */

type Uncurried<T, A extends unknown[], R> = (self: T, ...args: A) => R;

// uncurry(f)(self, ...args) is f.call(self, ...args), with `call` itself captured.
const uncurry = Function.prototype.bind.bind(Function.prototype.call) as <T, A extends unknown[], R>(
  fn: (this: T, ...args: A) => R,
) => Uncurried<T, A, R>;

function getter<T, R>(proto: object, name: string): (self: T) => R {
  return uncurry(Object.getOwnPropertyDescriptor(proto, name)!.get as (this: T) => R);
}

// ------------------------------------------------------------- constructors
export const U8 = Uint8Array;
export const DV = DataView;
export const AB = ArrayBuffer;
export const SafeMap = Map;
export const SafePromise = Promise;
export const SafeError = Error;
export const SafeAbortController = AbortController;

// ------------------------------------------------------------- bytes
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
export const u8Length = getter<Uint8Array, number>(TypedArrayPrototype, "length");
export const u8Buffer = getter<Uint8Array, ArrayBuffer>(TypedArrayPrototype, "buffer");
export const u8ByteOffset = getter<Uint8Array, number>(TypedArrayPrototype, "byteOffset");
export const u8Set = uncurry(
  Uint8Array.prototype.set as (this: Uint8Array, src: ArrayLike<number>, offset?: number) => void,
);
export const u8Subarray = uncurry(
  Uint8Array.prototype.subarray as (this: Uint8Array, begin?: number, end?: number) => Uint8Array,
);
export const u8Slice = uncurry(
  Uint8Array.prototype.slice as (this: Uint8Array, begin?: number, end?: number) => Uint8Array,
);

export const dvGetUint8 = uncurry(DataView.prototype.getUint8);
export const dvGetUint16 = uncurry(DataView.prototype.getUint16);
export const dvGetUint32 = uncurry(DataView.prototype.getUint32);
export const dvGetInt8 = uncurry(DataView.prototype.getInt8);
export const dvGetInt16 = uncurry(DataView.prototype.getInt16);
export const dvGetInt32 = uncurry(DataView.prototype.getInt32);
export const dvGetFloat32 = uncurry(DataView.prototype.getFloat32);
export const dvGetFloat64 = uncurry(DataView.prototype.getFloat64);
export const dvGetBigInt64 = uncurry(DataView.prototype.getBigInt64);
export const dvGetBigUint64 = uncurry(DataView.prototype.getBigUint64);
export const dvSetUint8 = uncurry(DataView.prototype.setUint8);
export const dvSetUint16 = uncurry(DataView.prototype.setUint16);
export const dvSetUint32 = uncurry(DataView.prototype.setUint32);
export const dvSetInt8 = uncurry(DataView.prototype.setInt8);
export const dvSetInt16 = uncurry(DataView.prototype.setInt16);
export const dvSetInt32 = uncurry(DataView.prototype.setInt32);
export const dvSetFloat64 = uncurry(DataView.prototype.setFloat64);

// ------------------------------------------------------------- text
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = uncurry(
  TextEncoder.prototype.encode as (this: InstanceType<typeof TextEncoder>, input?: string) => Uint8Array,
);
const decode = uncurry(
  TextDecoder.prototype.decode as (this: InstanceType<typeof TextDecoder>, input?: Uint8Array) => string,
);
export const utf8Encode = (text: string): Uint8Array => encode(encoder, text);
export const utf8Decode = (bytes: Uint8Array): string => decode(decoder, bytes);
const encodeIntoMethod = uncurry(
  TextEncoder.prototype.encodeInto as (
    this: InstanceType<typeof TextEncoder>,
    input: string,
    into: Uint8Array,
  ) => { read: number; written: number },
);
/** Encodes `text` into `into` as far as it fits: the UTF-16 units read and the bytes written. */
export const utf8EncodeInto = (text: string, into: Uint8Array): { read: number; written: number } =>
  encodeIntoMethod(encoder, text, into);
export const stringCharCodeAt = uncurry(String.prototype.charCodeAt as (this: string, index: number) => number);
export const stringFromCharCode = String.fromCharCode;

export const jsonParse = JSON.parse;
export const jsonStringify = JSON.stringify;
export const SafeString = String;
export const SafeNumber = Number;
export const stringSlice = uncurry(String.prototype.slice as (this: string, start?: number, end?: number) => string);

// ------------------------------------------------------------- objects and arrays
export const objectKeys = Object.keys;
export const objectHasOwn = Object.hasOwn;
export const objectDefineProperty = Object.defineProperty;
export const objectGetPrototypeOf = Object.getPrototypeOf;
export const ObjectPrototype = Object.prototype;
export const arrayIsArray = Array.isArray;
export const numberIsInteger = Number.isInteger;
export const arraySlice = uncurry(
  Array.prototype.slice as (this: readonly unknown[], start?: number, end?: number) => unknown[],
) as <T>(self: readonly T[], start?: number, end?: number) => T[];
export const arraySort = uncurry(Array.prototype.sort as (this: unknown[]) => unknown[]) as <T>(self: T[]) => T[];
export const arrayMap = uncurry(
  Array.prototype.map as (this: readonly unknown[], fn: (x: unknown) => unknown) => unknown[],
) as <T, R>(self: readonly T[], fn: (x: T) => R) => R[];
export const arrayFind = uncurry(
  Array.prototype.find as (this: readonly unknown[], fn: (x: unknown) => boolean) => unknown,
) as <T>(self: readonly T[], fn: (x: T) => boolean) => T | undefined;
export const arrayJoin = uncurry(Array.prototype.join as (this: readonly unknown[], separator?: string) => string);
export const mapGet = uncurry(Map.prototype.get as (this: Map<unknown, unknown>, key: unknown) => unknown) as <K, V>(
  self: Map<K, V>,
  key: K,
) => V | undefined;
export const mapSet = uncurry(
  Map.prototype.set as (this: Map<unknown, unknown>, key: unknown, value: unknown) => Map<unknown, unknown>,
) as <K, V>(self: Map<K, V>, key: K, value: V) => Map<K, V>;
export const mapDelete = uncurry(Map.prototype.delete as (this: Map<unknown, unknown>, key: unknown) => boolean) as <
  K,
  V,
>(
  self: Map<K, V>,
  key: K,
) => boolean;
export const mapForEach = uncurry(
  Map.prototype.forEach as (this: Map<unknown, unknown>, fn: (value: unknown) => void) => void,
) as <K, V>(self: Map<K, V>, fn: (value: V) => void) => void;
export const mapSize = getter<Map<unknown, unknown>, number>(Map.prototype, "size") as <K, V>(
  self: Map<K, V>,
) => number;
export const mapClear = uncurry(Map.prototype.clear as (this: Map<unknown, unknown>) => void) as <K, V>(
  self: Map<K, V>,
) => void;

// ------------------------------------------------------------- async and timers
export const promiseThen = uncurry(
  Promise.prototype.then as (
    this: Promise<unknown>,
    onFulfilled?: (value: unknown) => unknown,
    onRejected?: (reason: unknown) => unknown,
  ) => Promise<unknown>,
);
export const abortSignal = getter<AbortController, AbortSignal>(AbortController.prototype, "signal");
export const abort = uncurry(AbortController.prototype.abort as (this: AbortController, reason?: unknown) => void);

const bindTo = uncurry(Function.prototype.bind as (this: unknown, self: unknown) => unknown);

/**
 * A global function, read at its first use: Deno's `setTimeout` and `clearTimeout` are getters that load
 * its timers when first read (~4 ms of a boot), and most satellites never set one (only a call that reads
 * `ctx.signal` does). The getter is captured now, so a global an extension replaced is not what is read.
 */
function atFirstUse<F extends (...args: never[]) => unknown>(name: string): () => F {
  const own = Object.getOwnPropertyDescriptor(globalThis, name);
  const read = own?.get;
  if (read === undefined) {
    const fn = bindTo(own?.value as F, globalThis) as F;
    return () => fn;
  }
  const readIt = uncurry(read);
  let fn: F | undefined;
  return () => (fn ??= bindTo(readIt(globalThis) as F, globalThis) as F);
}
const setTimeoutFn = atFirstUse<(fn: () => void, ms: number) => unknown>("setTimeout");
const clearTimeoutFn = atFirstUse<(timer: unknown) => void>("clearTimeout");
export const setTimer = (fn: () => void, ms: number): unknown => setTimeoutFn()(fn, ms);
export const clearTimer = (timer: unknown): void => clearTimeoutFn()(timer);
export const dateNow = Date.now.bind(Date) as () => number;
export const logError = console.error.bind(console) as (...data: unknown[]) => void;

/** A value carried across awaits and timers. */
interface ContextVariable<T> {
  run(store: T, fn: () => unknown): unknown;
  get(): T | undefined;
}

/** What `AsyncLocalStorage` offers here (its types are Node's; the SDK compiles without them). */
interface LocalStorage<T> {
  run(store: T, fn: () => unknown): unknown;
  getStore(): T | undefined;
}
type LocalStorageClass = new <T>() => LocalStorage<T>;

/** The part of Deno's core the runtime uses: the async-context variable its AsyncLocalStorage is built on. */
interface DenoCore {
  readonly AsyncVariable?: new () => { enter(value: unknown): unknown; get(): unknown };
  readonly setAsyncContext?: (mapping: unknown) => void;
}

/**
 * Deno's own async variable, as Deno's `node:async_hooks` AsyncLocalStorage uses it (`run`: `enter`, then
 * `setAsyncContext` back to what it returned; `getStore`: `get`). Fetching `node:async_hooks` instead
 * loads Deno's Node compatibility layer, ~10 ms of every satellite's boot. Null off Deno (Node, in unit
 * tests), or on a Deno without it; `tests/unit/satellite-async-context.test.ts` holds the pinned Deno to it.
 */
function denoVariables(): (<T>() => ContextVariable<T>) | null {
  const deno = (globalThis as { Deno?: { readonly internal?: unknown } }).Deno;
  const internal = deno?.internal;
  if (typeof internal !== "symbol") return null;
  const core = (deno as Record<symbol, { core?: DenoCore } | undefined>)[internal]?.core;
  const Variable = core?.AsyncVariable;
  const setContext = core?.setAsyncContext;
  if (typeof Variable !== "function" || typeof setContext !== "function") return null;
  const enter = uncurry(Variable.prototype.enter as (this: object, value: unknown) => unknown);
  const get = uncurry(Variable.prototype.get as (this: object) => unknown);
  return <T>(): ContextVariable<T> => {
    const variable = new Variable();
    return {
      run: (store, fn) => {
        const before = enter(variable, store);
        try {
          return fn();
        } finally {
          setContext(before);
        }
      },
      get: () => get(variable) as T | undefined,
    };
  };
}

/** Node's AsyncLocalStorage, fetched, not imported (see below); it throws where there is none. */
function localStorages(): <T>() => ContextVariable<T> {
  // Fetched, not imported: an import of `node:async_hooks` would make every author's `deno check` need
  // Node's type package, and the artifact would keep an import the install's scan refuses.
  const AsyncLocalStorage = (
    (globalThis as { process?: { getBuiltinModule?(id: string): unknown } }).process?.getBuiltinModule?.(
      "node:async_hooks",
    ) as { AsyncLocalStorage?: LocalStorageClass } | undefined
  )?.AsyncLocalStorage;
  if (AsyncLocalStorage === undefined)
    throw new Error("tether satellite: this runtime has no AsyncLocalStorage (Deno 2 and Node 20.16 have)");
  const storageRun = uncurry(AsyncLocalStorage.prototype.run as LocalStorage<unknown>["run"]);
  const storageGet = uncurry(AsyncLocalStorage.prototype.getStore as LocalStorage<unknown>["getStore"]);
  return <T>(): ContextVariable<T> => {
    const storage = new AsyncLocalStorage<T>();
    return { run: (store, fn) => storageRun(storage, store, fn), get: () => storageGet(storage) as T | undefined };
  };
}

const fromDeno = denoVariables();
/** Where the invocation context comes from here: Deno's core, or Node's `node:async_hooks`. */
export const asyncContextSource: "deno core" | "node:async_hooks" =
  fromDeno !== null ? "deno core" : "node:async_hooks";
const contextVariable = fromDeno ?? localStorages();

/**
 * Which open invocation the running code belongs to, carried across awaits
 * and timers: a capability call carries the token of the invocation whose code
 * made it, not of whichever one happens to be open (several may be).
 */
export class InvocationContext<T> {
  readonly #variable: ContextVariable<T> = contextVariable<T>();

  run<R>(store: T, fn: () => R): R {
    return this.#variable.run(store, fn) as R;
  }

  get(): T | undefined {
    return this.#variable.get();
  }
}
