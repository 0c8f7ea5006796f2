/**
 * A little colour, on a terminal only: `FAIL`/`ok` in `tether doctor`,
 * `DENIED`/`ALLOWED` in `tether audit`, the headings of the help and of
 * `tether dev`'s diff. Off when the output is not a terminal (piped, a file, a
 * test), when `NO_COLOR` is set to anything (https://no-color.org) and when
 * `TERM` is `dumb`. Nothing else changes: the text is the same with or without.
 */

export interface Paint {
  readonly red: (text: string) => string;
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly bold: (text: string) => string;
}

const sgr = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;

/** ANSI colours. */
export const COLOUR: Paint = { red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39), bold: sgr(1, 22) };

/** No colour: every function returns its text. */
export const PLAIN: Paint = { red: (t) => t, green: (t) => t, yellow: (t) => t, bold: (t) => t };

/** The paint for output to `stream` (a terminal or not) under `env`. */
export function paintFor(
  stream: { readonly isTTY?: boolean },
  env: Readonly<Record<string, string | undefined>>,
): Paint {
  if (stream.isTTY !== true) return PLAIN;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return PLAIN;
  if (env.TERM === "dumb") return PLAIN;
  return COLOUR;
}
