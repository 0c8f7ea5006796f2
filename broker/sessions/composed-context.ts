/**
 * The session's composed context: every active extension's context pieces
 * (its loaders' texts, then its preparation's instructions and context), in
 * registry order, under one total bound. Past the bound a piece is left out
 * whole — never cut mid-text, where the model could not tell it was cut — and
 * the omission is a warning on its extension's status row; earlier extensions
 * (in registry order) keep their place, as they keep a colliding name.
 */
import type { ContextPiece } from "./context-loaders.js";

/** The most the composed context may hold, all pieces together (UTF-8 bytes): 256 KiB. */
export const MAX_SESSION_CONTEXT_BYTES = 256 * 1024;

export interface ComposedContext {
  readonly pieces: readonly ContextPiece[];
  /** What was left out past the bound, with why, by extension. */
  readonly omitted: ReadonlyMap<string, readonly string[]>;
}

/** Composes `piecesOf` each extension in `order` under `bound` bytes. */
export function composeContext(
  order: readonly string[],
  piecesOf: (extension: string) => readonly ContextPiece[],
  bound = MAX_SESSION_CONTEXT_BYTES,
): ComposedContext {
  const pieces: ContextPiece[] = [];
  const omitted = new Map<string, string[]>();
  let used = 0;
  for (const extension of order) {
    for (const piece of piecesOf(extension)) {
      const bytes = Buffer.byteLength(piece.text);
      if (used + bytes <= bound) {
        pieces.push(piece);
        used += bytes;
        continue;
      }
      const why =
        `${piece.source} (${bytes} bytes) left out of the session's context: with what comes earlier in registry ` +
        `order it would pass the bound of ${bound} bytes`;
      omitted.set(extension, [...(omitted.get(extension) ?? []), why]);
    }
  }
  return { pieces, omitted };
}
