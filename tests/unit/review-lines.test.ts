/**
 * The review's lines, which `tether review` prints and the console shows in
 * sections: printing them is the review (control characters written out);
 * each egress rule's lines carry the rule; an upgrade's `+` lines and [NEW]
 * items are marked as widenings, its `-` lines not; a revocation says who
 * made it and when.
 */
import { parseManifest } from "../../broker/install/manifest.js";
import { requestedGrants } from "../../broker/registry/grants.js";
import type { Approval, Installed } from "../../broker/registry/registry.js";
import { buildReview, renderReview, reviewLines, visibleText } from "../../broker/registry/review.js";

const HEAD = `name = "mesh"\nversion = "1.0.0"\ndescription = "Meshes\\u001b[2J things."\nentry = "index.ts"\n`;
const TOOL = `[[tool]]\nname = "look"\ndescription = "Looks."\nparameters = { type = "object", properties = {} }\n`;

function installed(text: string, hash: string): Installed {
  const manifest = parseManifest(text, "manifest.toml");
  return {
    name: manifest.name,
    version: manifest.version,
    description: manifest.description,
    manifest,
    manifestText: text,
    manifestHash: hash,
    artifactHash: hash,
    artifactPath: "",
    sourceDir: "",
    installedAt: 1,
  };
}

function approvalOf(of: Installed, extra: Partial<Approval> = {}): Approval {
  return {
    id: 1,
    manifestHash: of.manifestHash,
    artifactHash: of.artifactHash,
    grants: requestedGrants(of.manifest),
    approvedBy: "alice",
    approvedAt: 1,
    revokedAt: null,
    revokedBy: null,
    withheldNet: [],
    ...extra,
  };
}

const v1 = installed(`${HEAD}${TOOL}[net]\nallow = ["GET https://a.example/v1", "POST https://b.example/in"]\n`, "h1");

test("printing the lines is the review, with control characters written out", () => {
  const review = buildReview(v1, "pending", null);
  const lines = reviewLines(review, v1);
  expect(renderReview(review, v1)).toBe(lines.map((l) => visibleText(l.text)).join("\n"));
  expect(renderReview(review, v1)).toContain("Meshes\\u{1b}[2J things.");
  expect(
    lines.filter((l) => l.section === "rules" && l.rule === "GET https://a.example/v1").map((l) => l.text.trim()),
  ).toEqual([
    "the network: GET https://a.example/v1",
    expect.stringMatching(/^means: GET https:\/\/a\.example:443\/v1 — /),
  ]);
  expect(lines.find((l) => l.text.startsWith("  look — "))?.section).toBe("tools");
  expect(lines.find((l) => l.text.startsWith("Limits: "))?.section).toBe("limits");
  expect(lines.find((l) => l.text.startsWith("To allow it: "))?.section).toBe("next");
  expect(lines.some((l) => l.widening === true)).toBe(false);
});

test("an upgrade: each widening marked, what it gives up not", () => {
  const v2 = installed(
    `${HEAD.replace("1.0.0", "1.1.0")}${TOOL}[[tool]]\nname = "poke"\ndescription = "Pokes."\nparameters = { type = "object", properties = {} }\n[net]\nallow = ["GET https://a.example/v1", "GET https://c.example/"]\n`,
    "h2",
  );
  const review = buildReview(v2, "changed", approvalOf(v1));
  const lines = reviewLines(review, v2);
  const diff = lines.filter(
    (l) =>
      l.section === "diff" && l.text.trim() !== "" && !/^ {2}(artifact|files that differ|to see how):/.test(l.text),
  );
  expect(diff.map((l) => [l.text, l.widening === true])).toEqual([
    ["CHANGED SINCE APPROVAL — this upgrade asks for MORE than was approved:", false],
    ["  + network: GET https://c.example/", true],
    ["  + tool: poke", true],
    ["  - network: POST https://b.example/in", false],
  ]);
  expect(lines.find((l) => l.rule === "GET https://c.example/" && l.detail !== true)).toMatchObject({
    widening: true,
    text: "  the network: GET https://c.example/   [NEW]",
  });
  expect(lines.find((l) => l.text.startsWith("  poke — "))).toMatchObject({ section: "tools", widening: true });
});

test("a revoked extension's status line says who revoked it and when", () => {
  const at = Date.UTC(2026, 11, 1, 10, 0, 0);
  const review = buildReview(v1, "revoked", approvalOf(v1, { revokedAt: at, revokedBy: "bob" }));
  expect(review.revoked).toEqual({ by: "bob", at });
  expect(renderReview(review, v1)).toContain("status: revoked — revoked by bob at 2026-12-01T10:00:00.000Z");
  // Revoked before who revoked was recorded: when, not by whom.
  expect(renderReview(buildReview(v1, "revoked", approvalOf(v1, { revokedAt: at })), v1)).toContain(
    "status: revoked — revoked at 2026-12-01T10:00:00.000Z",
  );
  expect(renderReview(buildReview(v1, "approved", approvalOf(v1)), v1)).toContain("status: approved\n");
});

test("a route served as an MCP resource says so, with its URI and MIME type; a route that is not, does not", () => {
  const routes =
    `[[route]]\nname = "logo"\ndescription = "The logo."\n` +
    `resource = { uri = "docs://logo", mime_type = "image/png" }\n` +
    `[[route]]\nname = "status"\ndescription = "The state."\n`;
  const of = installed(`${HEAD}${TOOL}${routes}`, "h3");
  const text = renderReview(buildReview(of, "pending", null), of);
  expect(text).toContain("It serves a route the harness calls: logo — The logo. (MCP resource docs://logo, image/png)");
  expect(text).toMatch(/It serves a route the harness calls: status — The state\.$/m);
});
