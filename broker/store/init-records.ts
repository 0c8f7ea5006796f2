/**
 * The `extension_inits` table: which approved versions had their initializer
 * run, keyed as an approval pins a version (extension, artifact hash,
 * manifest hash). A success is final; a failure is kept (its reason, when)
 * until a later broker start runs the init again.
 */
import { and, eq } from "drizzle-orm";
import type { Store } from "./open.js";
import { extensionInits } from "./schema.js";

/** One approved version, as its approval pins it. */
export interface InitKey {
  readonly extension: string;
  readonly artifactHash: string;
  readonly manifestHash: string;
}

export interface InitRecord extends InitKey {
  readonly version: string;
  /** When it succeeded (ms since the epoch), or null. */
  readonly ranAt: number | null;
  readonly message: string | null;
  /** Its last failure's reason, while it has not succeeded. */
  readonly error: string | null;
  readonly failedAt: number | null;
}

const where = (key: InitKey) =>
  and(
    eq(extensionInits.extension, key.extension),
    eq(extensionInits.artifactHash, key.artifactHash),
    eq(extensionInits.manifestHash, key.manifestHash),
  );

export class InitRecords {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The record of this version, or null when its init never ran on this home. */
  get(key: InitKey): InitRecord | null {
    return this.#store.orm.select().from(extensionInits).where(where(key)).get() ?? null;
  }

  /** It succeeded: never run again for this version. */
  succeeded(key: InitKey, version: string, message: string | null): void {
    const set = { version, ranAt: Date.now(), message, error: null, failedAt: null };
    this.#store.orm
      .insert(extensionInits)
      .values({ ...key, ...set })
      .onConflictDoUpdate({
        target: [extensionInits.extension, extensionInits.artifactHash, extensionInits.manifestHash],
        set,
      })
      .run();
  }

  /** It failed with `error` (a success recorded meanwhile, by another process, stands). */
  failed(key: InitKey, version: string, error: string): void {
    if (this.get(key)?.ranAt != null) return;
    const set = { version, ranAt: null, message: null, error, failedAt: Date.now() };
    this.#store.orm
      .insert(extensionInits)
      .values({ ...key, ...set })
      .onConflictDoUpdate({
        target: [extensionInits.extension, extensionInits.artifactHash, extensionInits.manifestHash],
        set,
      })
      .run();
  }
}
