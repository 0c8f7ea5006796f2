/**
 * docs/api.md and `tether serve` cannot drift: every method the server accepts
 * has a section, every section names a method, and every error code is listed.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Params, RpcCode, ServeCode } from "../../broker/serve/protocol.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DOC = readFileSync(join(REPO, "docs", "api.md"), "utf8");

test("every method has a section in docs/api.md, and every section is a method", () => {
  const documented = [...DOC.matchAll(/^### `([a-z_]+\.[a-z_]+)`$/gm)].map((m) => m[1]);
  expect([...documented].sort()).toEqual(Object.keys(Params).sort());
});

test("every JSON-RPC error code the server answers is in docs/api.md", () => {
  const codes = [...Object.values(RpcCode), ...Object.values(ServeCode)].map(String);
  expect(codes.length).toBeGreaterThanOrEqual(18);
  expect(codes.filter((code) => !DOC.includes(code))).toEqual([]);
});
