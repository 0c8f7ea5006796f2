/**
 * A file an artifact was built from. Its own module because both the bundler
 * (bundle-core.ts) and the migrations reader (migrations.ts) produce them, and
 * the bundler appends the migrations: the type must not tie the two together.
 */

/** A file of the extension folder the bundle read: its path in the folder (with /), its hash and contents. */
export interface SourceFile {
  readonly path: string;
  readonly sha256: string;
  readonly content: Buffer;
}
