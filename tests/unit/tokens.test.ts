import { mintToken, tokensEqual } from "../../broker/satellite/tokens.js";

test("mintToken() gives distinct 192-bit URL-safe tokens across pool refills", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 2_000; i++) {
    const t = mintToken();
    expect(t).toMatch(/^[A-Za-z0-9_-]{32}$/);
    seen.add(t);
  }
  expect(seen.size).toBe(2_000);
});

test("tokensEqual() compares whole tokens, whatever their lengths", () => {
  const t = mintToken();
  expect(tokensEqual(t, t)).toBe(true);
  expect(tokensEqual(t, `${t.slice(0, -1)}${t.endsWith("A") ? "B" : "A"}`)).toBe(false);
  expect(tokensEqual(t, t.slice(0, 16))).toBe(false);
  expect(tokensEqual("", t)).toBe(false);
});
