/**
 * The toy kind `greet`, its SDK half: the type an extension's `kinds.greet`
 * export has, from the wire half's schemas. Imported as a type only (esbuild
 * drops it at bundling), so the extension's artifact holds none of this folder.
 */
import type { KindHandlers } from "@tether/ext";
import type { Greet } from "./wire.js";

export type Greeters = KindHandlers<typeof Greet>;
