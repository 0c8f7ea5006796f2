/**
 * @tether/pi's mapping of a tool value's blocks onto pi's content
 * (packages/pi/tool-result.js): pi's models read text and images, so every
 * other block becomes text — JSON as JSON, a text resource as its text, audio
 * and a binary resource named, never pasted in as base64.
 */
import { piContent } from "../../packages/pi/tool-result.js";

test("text and images pass; JSON, resources and audio become text, binary data only named", () => {
  const data = "QUJD".repeat(1000);
  expect(
    piContent([
      { type: "text", text: "hi" },
      { type: "image", data, mimeType: "image/png" },
      { type: "json", json: { a: 1 } },
      { type: "resource", resource: { uri: "file:///notes.md", text: "# Notes" } },
      { type: "resource", resource: { uri: "tickets://42", blob: data } },
      { type: "audio", data, mimeType: "audio/wav" },
    ]),
  ).toEqual([
    { type: "text", text: "hi" },
    { type: "image", data, mimeType: "image/png" },
    { type: "text", text: '{"a":1}' },
    { type: "text", text: "# Notes" },
    { type: "text", text: "[resource tickets://42]" },
    { type: "text", text: "[audio audio/wav]" },
  ]);
});
