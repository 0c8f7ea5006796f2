/**
 * A route's answer as the content of the MCP resource it serves: a text MIME
 * type's answer is the text itself; any other type's must be base64 (a route
 * answers a string) and is sent as `blob`, checked first so a client is never
 * handed bytes that do not decode.
 */
import { McpFailure } from "./mcp-failure.js";
import * as v from "valibot";
import type { ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode } from "./protocol/error-codes.js";
import { Base64 } from "../../jail-runtime/wire/media-blocks.js";

type Contents = ReadResourceResult["contents"][number];

/** Types whose content is text: `text/*`, JSON, XML and the other text formats routes answer. */
const TEXT_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/javascript",
  "application/ecmascript",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/sql",
  "application/graphql",
  "application/x-ndjson",
  "application/x-sh",
]);

export function isTextMimeType(mimeType: string): boolean {
  const type = mimeType.toLowerCase();
  return type.startsWith("text/") || TEXT_TYPES.has(type) || /\+(?:json|xml|yaml)$/.test(type);
}

/** The content of `uri` from its route's answer; an answer a binary type cannot carry is an MCP error saying so. */
export function resourceContents(
  uri: string,
  mimeType: string,
  answer: string,
  route: { readonly extension: string; readonly name: string },
): Contents {
  if (isTextMimeType(mimeType)) return { uri, mimeType, text: answer };
  if (!v.safeParse(Base64, answer).success)
    throw new McpFailure(
      ErrorCode.InternalError,
      `route '${route.extension}/${route.name}' serves '${uri}' as ${mimeType}, a binary type, so it must return ` +
        `the bytes as base64 (RFC 4648: A-Z a-z 0-9 + /, = padding, no line breaks); it returned ` +
        `${answer.length} characters that are not`,
    );
  return { uri, mimeType, blob: answer };
}
