/**
 * The content blocks beside text and JSON: an image, a piece of audio, an
 * embedded resource — shaped as MCP shapes them, so a harness that speaks MCP
 * passes them on as they are. Binary data travels as base64 text, checked
 * here, so nothing downstream has to decode to find out it is not base64.
 *
 * Plain TypeScript with no runtime-specific imports (the broker and the
 * satellite's prelude both import it).
 */
import * as v from "valibot";

/** Canonical base64 (RFC 4648 §4, padded): what MCP's `data` and `blob` hold. */
export const Base64 = v.pipe(
  v.string(),
  v.regex(
    /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
    "expected base64 text (A-Z a-z 0-9 + /, padded with = to a multiple of 4, no line breaks)",
  ),
);

/** A media type, `type/subtype` with no parameters, e.g. `image/png`. */
export const MimeType = v.pipe(
  v.string(),
  v.maxLength(127),
  v.regex(/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i, "expected a media type such as image/png"),
);

/** A resource's URI: any scheme, at most 2,048 characters. */
export const ResourceUri = v.pipe(
  v.string(),
  v.maxLength(2048),
  v.regex(/^[A-Za-z][A-Za-z0-9+.-]*:\S*$/, "expected a URI with a scheme, e.g. file:///notes.md"),
);

export const ImageBlock = v.object({ type: v.literal("image"), data: Base64, mimeType: MimeType });
export const AudioBlock = v.object({ type: v.literal("audio"), data: Base64, mimeType: MimeType });

/** An embedded resource: its URI and either its text or its bytes (base64). */
export const EmbeddedResource = v.union([
  v.object({ uri: ResourceUri, mimeType: v.optional(MimeType), text: v.string() }),
  v.object({ uri: ResourceUri, mimeType: v.optional(MimeType), blob: Base64 }),
]);
export const ResourceBlock = v.object({ type: v.literal("resource"), resource: EmbeddedResource });

/** The three: the same shape in a satellite's answer, a hook's substitute and the library's value. */
export const MediaBlock = v.variant("type", [ImageBlock, AudioBlock, ResourceBlock]);
export type MediaBlock = v.InferOutput<typeof MediaBlock>;
