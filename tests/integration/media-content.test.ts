/**
 * Image, audio and embedded-resource blocks (jail-runtime/wire/media-blocks.ts)
 * from real jailed satellites: the SDK's `image`, `audio` and `resource` reach
 * the caller whole (base64 checked, the media type kept), a block that is not
 * whole makes the call `crashed` naming the field — one probe per way a block
 * can be broken — a hook's substitute may be one, and `textOf` names binary
 * data without printing it.
 */
import { rmSync } from "node:fs";
import { textOf } from "../../broker/base/outcome.js";
import type { Session } from "../../broker/sessions/session.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { writeExtensions } from "./support/write-extensions.js";

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00];

/** Ways a media block can be broken, each returned by the `broken` tool under its key. */
const BROKEN: Record<string, { block: unknown; field: string }> = {
  "not base64": { block: { type: "image", data: "a!b=", mimeType: "image/png" }, field: ".content.0.data" },
  "unpadded base64": { block: { type: "image", data: "abc", mimeType: "image/png" }, field: ".content.0.data" },
  "padding inside": { block: { type: "audio", data: "ab==cd==", mimeType: "audio/wav" }, field: ".content.0.data" },
  "data not text": { block: { type: "image", data: [1, 2], mimeType: "image/png" }, field: ".content.0.data" },
  "no media type": { block: { type: "audio", data: "AAAA" }, field: ".content.0.mimeType" },
  "media type with parameters": {
    block: { type: "image", data: "AAAA", mimeType: "image/png; q=1" },
    field: ".content.0.mimeType",
  },
  "resource without a scheme": {
    block: { type: "resource", resource: { uri: "notes.md", text: "x" } },
    field: ".content.0.resource",
  },
  "resource with neither text nor blob": {
    block: { type: "resource", resource: { uri: "file:///x" } },
    field: ".content.0.resource",
  },
  "resource blob not base64": {
    block: { type: "resource", resource: { uri: "file:///x", blob: "%%%%" } },
    field: ".content.0.resource",
  },
};

const EXTENSIONS = {
  media: {
    manifest: `
[[tool]]
name = "media"
description = "Answers one block of each kind."
parameters = { type = "object", properties = {} }

[[tool]]
name = "broken"
description = "Answers a broken block."
parameters = { type = "object", properties = { which = { type = "string" } }, required = ["which"] }

[[tool]]
name = "plain"
description = "Answers text."
parameters = { type = "object", properties = {} }

[[hook]]
event = "tool_call"
match = ["plain"]
`,
    code: `import { audio, hook, image, outcome, resource, text } from "@tether/ext";
const BROKEN = ${JSON.stringify(Object.fromEntries(Object.entries(BROKEN).map(([k, v]) => [k, v.block])))};
export const tools = {
  media: () => outcome([
    text("four blocks"),
    image(new Uint8Array(${JSON.stringify(PNG)}), "image/png"),
    audio("UklGRg==", "audio/wav"),
    resource("file:///notes.md", "# Notes", "text/markdown"),
    resource("tickets://42/attachment", new Uint8Array([1, 2, 3, 4]), "application/pdf"),
  ]),
  broken: (args: { which: string }) => ({ content: [BROKEN[args.which]], terminate: "continue" }),
  plain: () => outcome([text("the tool ran")]),
};
export const hooks = {
  tool_call: hook("tool_call", () => ({
    result: { content: [{ type: "image", data: "R0lGODlh", mimeType: "image/gif" }], terminate: false },
  })),
};
`,
  },
} as const;

let fixtures: string;
let opened: HookSession;
let session: Session;

beforeAll(async () => {
  fixtures = writeExtensions("tether-media-ext-", EXTENSIONS);
  opened = await openHookSession("tether-media-", fixtures, Object.keys(EXTENSIONS), "media-1");
  ({ session } = opened);
}, 120_000);

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

test("image, audio and resource blocks reach the caller whole, binary data as base64", async () => {
  const { outcome } = await session.callTool("media", "{}");
  expect(outcome).toEqual({
    ok: true,
    value: {
      terminate: false,
      content: [
        { type: "text", text: "four blocks" },
        { type: "image", data: Buffer.from(PNG).toString("base64"), mimeType: "image/png" },
        { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///notes.md", mimeType: "text/markdown", text: "# Notes" } },
        {
          type: "resource",
          resource: { uri: "tickets://42/attachment", mimeType: "application/pdf", blob: "AQIDBA==" },
        },
      ],
    },
  });
  expect(textOf(outcome)).toBe(
    "four blocks | [image image/png, 9 bytes] | [audio audio/wav, 4 bytes] | # Notes | " +
      "[resource tickets://42/attachment application/pdf, 4 bytes]",
  );
});

test.each(Object.keys(BROKEN))("a block with %s makes the call crashed, naming the field", async (which) => {
  const { outcome } = await session.callTool("broken", JSON.stringify({ which }));
  expect(outcome.ok).toBe(false);
  if (outcome.ok) return;
  expect(outcome.error.code).toBe("crashed");
  expect(outcome.error.msg).toContain("'broken' answered a malformed tool value");
  expect(outcome.error.msg).toContain(BROKEN[which]!.field);
});

test("a hook's substitute may be a media block; the tool does not run", async () => {
  const report = await session.callTool("plain", "{}");
  expect(report.substitutedBy).toBe("media");
  expect(report.outcome).toEqual({
    ok: true,
    value: { content: [{ type: "image", data: "R0lGODlh", mimeType: "image/gif" }], terminate: false },
  });
});
