/**
 * Paths a prefix rule cannot vouch for (broker/egress/path-guard.ts), as a
 * class: generated probes for every traversal payload, encoding depth, hex
 * case, overlong UTF-8 form and path parameter, judged against a `/v1` prefix
 * rule — and the plain paths that must still pass.
 */
import { judge, type EgressPolicy, type Resolver } from "../../broker/egress/judge.js";
import { MAX_DECODES, unsafePath } from "../../broker/egress/path-guard.js";
import { parseRule } from "../../broker/egress/rules.js";
import { NO_REACH } from "../../broker/egress/reach.js";

const RULE = "https://api.example.com/v1";
const publicAnswer: Resolver = async () => [{ address: "93.184.216.34", family: 4 }];

function policy(rules: readonly string[], deny: readonly string[] = []): EgressPolicy {
  const operatorDeny = deny.map((r) => parseRule(r, { allowBroad: true }));
  return {
    extension: "probe",
    approved: rules.map((r) => parseRule(r)),
    operatorDeny,
    reach: NO_REACH,
    offline: false,
    sessionAllow: null,
  };
}

const judged = (path: string, rules: readonly string[] = [RULE], deny: readonly string[] = []) =>
  judge(new URL(`https://api.example.com${path}`), "GET", policy(rules, deny), publicAnswer);

// ── the generator ──────────────────────────────────────────────────────────

/** `%XX` escaped `depth` more times (`%2e` → `%252e` → `%25252e` …). */
const deeper = (escape: string, depth: number) => escape.replace(/%/g, `%${"25".repeat(depth)}`);
const hex = (bytes: readonly number[], upper: boolean) =>
  bytes
    .map((b) => `%${b.toString(16).padStart(2, "0")}`)
    .map((e) => (upper ? e.toUpperCase() : e))
    .join("");

/** Each traversal character: its UTF-8 byte, its overlong 2- and 3-byte forms. */
const CHARS = {
  ".": { byte: [0x2e], overlong2: [0xc0, 0xae], overlong3: [0xe0, 0x80, 0xae] },
  "/": { byte: [0x2f], overlong2: [0xc0, 0xaf], overlong3: [0xe0, 0x80, 0xaf] },
  "\\": { byte: [0x5c], overlong2: [0xc1, 0x9c], overlong3: [0xe0, 0x81, 0x9c] },
} as const;

/** Every spelling of one character: form × hex case × depth 0–3. */
function spellings(ch: keyof typeof CHARS): Array<{ spelling: string; how: string }> {
  const out: Array<{ spelling: string; how: string }> = [];
  for (const form of ["byte", "overlong2", "overlong3"] as const) {
    for (const upper of [false, true]) {
      for (let depth = 0; depth <= 3; depth++) {
        out.push({
          spelling: deeper(hex(CHARS[ch][form], upper), depth),
          how: `${form} ${upper ? "upper" : "lower"} depth ${depth}`,
        });
      }
    }
  }
  return out;
}

/** The payloads: `..`, `.`, `/`, `\` spelled every way (for `..`, each dot and both), with and without `;params`, in two places. */
function probes(): Array<[path: string, how: string]> {
  const out: Array<[string, string]> = [];
  const payloads: Array<{ name: string; variants: Array<{ text: string; how: string }> }> = [
    {
      name: "..",
      variants: spellings(".").flatMap(({ spelling, how }) => [
        { text: `${spelling}${spelling}`, how: `both dots ${how}` },
        { text: `.${spelling}`, how: `second dot ${how}` },
        { text: `${spelling}.`, how: `first dot ${how}` },
      ]),
    },
    { name: ".", variants: spellings(".").map(({ spelling, how }) => ({ text: spelling, how })) },
    { name: "/", variants: spellings("/").map(({ spelling, how }) => ({ text: `..${spelling}..${spelling}`, how })) },
    { name: "\\", variants: spellings("\\").map(({ spelling, how }) => ({ text: `..${spelling}..${spelling}`, how })) },
  ];
  for (const { name, variants } of payloads) {
    for (const { text, how } of variants) {
      for (const params of ["", ";", ";jsessionid=1"]) {
        out.push([`/v1/${text}${params}/admin`, `'${name}' ${how}${params ? ` + '${params}'` : ""}`]);
        out.push([
          `/v1/x/${text}${params}/${text}${params}/admin`,
          `'${name}' twice ${how}${params ? ` + '${params}'` : ""}`,
        ]);
      }
    }
  }
  // Plain path parameters, the classic `..;` and its kin.
  for (const p of [
    "/v1/..;/admin",
    "/v1/.;/admin",
    "/v1;/../admin",
    "/v1/x;y",
    "/v1/%3b/admin",
    "/v1/%253B/admin",
    "/v1/..%3b/admin",
  ])
    out.push([p, "path parameter"]);
  // Malformed escapes and other spellings servers read differently.
  for (const p of [
    "/v1/%zz",
    "/v1/%",
    "/v1/%2",
    "/v1/%u002e%u002e/admin",
    "/v1/%25u002e/admin",
    "/v1/%00/admin",
    "/v1/%2500/admin",
    "/v1/%ed%a0%80",
    "/v1/%80",
    "/v1/%c0",
    "/v1/%f8%80%80%80%ae",
  ]) {
    out.push([p, "malformed"]);
  }
  return out;
}

const PROBES = probes();

describe("generated probes against a /v1 prefix rule", () => {
  test("the generator covers every payload, depth, case, form and parameter", () => {
    // 4 payloads; `..` has 3 dot placements; 3 forms × 2 cases × 4 depths; 3 parameter forms; 2 places.
    expect(PROBES.length).toBe((3 + 1 + 1 + 1) * 3 * 2 * 4 * 3 * 2 + 7 + 11);
    expect(PROBES.some(([p]) => p.includes("%2525252E"))).toBe(true);
    expect(PROBES.some(([p]) => p.includes("%25e0%2580%25af"))).toBe(true);
  });

  test("every probe is refused, and one still under /v1 after URL parsing names the rule and why", async () => {
    const allowed: string[] = [];
    const unnamed: string[] = [];
    let resolvedByParser = 0;
    for (const [path, how] of PROBES) {
      const verdict = await judged(path);
      const parsed = new URL(`https://api.example.com${path}`).pathname;
      if (!/[%;]/.test(parsed)) {
        // The URL parser already resolved it (`/v1/%2e/admin` is `/v1/admin`): judged as the plain path it is.
        resolvedByParser++;
        expect(parsed.split("/").some((seg) => seg === "." || seg === "..")).toBe(false);
        expect(verdict.allowed).toBe(parsed === "/v1" || parsed.startsWith("/v1/"));
        continue;
      }
      if (verdict.allowed) {
        allowed.push(`${path} (${how})`);
        continue;
      }
      const under = parsed === "/v1" || parsed.startsWith("/v1/");
      if (
        under &&
        !(verdict.rule.startsWith("path:") && verdict.rule.endsWith(` ${RULE}`) && verdict.reason.includes(`'${RULE}'`))
      ) {
        unnamed.push(`${path} → ${verdict.rule}: ${verdict.reason}`);
      }
      if (!under) expect(verdict.rule).toBe("manifest:no-match");
    }
    expect(allowed).toEqual([]);
    expect(unnamed).toEqual([]);
    // Only depth-0 `%2e`/`%2E` dot segments without parameters — (3 spellings of `..` + `.`) × 2 cases × 2 places —
    // and `/v1;/../admin`, whose `..` removes the segment `v1;`.
    expect(resolvedByParser).toBe(4 * 2 * 2 + 1);
  });

  test("unsafePath refuses each probe as the URL parser leaves it, whatever rule it meets", () => {
    const passed = PROBES.map(([path]) => new URL(`https://api.example.com${path}`).pathname).filter(
      (p) => /[%;]/.test(p) && unsafePath(p) === null,
    );
    expect(passed).toEqual([]);
  });
});

describe("what the refusal says", () => {
  test.each([
    ["/v1/..;/admin", "path:params", "path parameter (';')"],
    ["/v1/%252e%252e/admin", "path:encoded-dot", "encoded '.' (after decoding 1 time)"],
    ["/v1/%25252e%25252e/admin", "path:encoded-dot", "(after decoding 2 times)"],
    ["/v1/%252f/admin", "path:encoded-slash", "encoded '/'"],
    ["/v1/x%2fy", "path:encoded-slash", "encoded '/'"],
    ["/v1/%255c/admin", "path:encoded-backslash", "encoded '\\'"],
    ["/v1/%c0%ae%c0%ae/admin", "path:bad-utf8", "not valid UTF-8"],
    ["/v1/%25c0%25ae/admin", "path:bad-utf8", "not valid UTF-8 (after decoding 1 time)"],
    ["/v1/%zz", "path:bad-encoding", "two hex digits"],
    ["/v1/%2500", "path:control", "control character"],
  ])("%s → %s", async (path, rule, why) => {
    const verdict = await judged(path);
    expect(verdict).toMatchObject({ allowed: false, rule: `${rule} ${RULE}` });
    expect(verdict.allowed ? "" : verdict.reason).toContain(why);
    expect(verdict.allowed ? "" : verdict.reason).toContain(`the rule '${RULE}'`);
  });

  test("a path still encoded after MAX_DECODES decodings is refused", () => {
    expect(unsafePath(`/v1/%${"25".repeat(MAX_DECODES + 1)}41`)).toMatchObject({ problem: "too-deep" });
  });
});

describe("plain paths still pass", () => {
  test.each([
    "/v1",
    "/v1/",
    "/v1/a-b_c~d",
    "/v1/%41",
    "/v1/%2541", // a double-encoded 'A' reads as 'A' at every depth
    "/v1/file.json",
    "/v1/a..b",
    "/v1/.well-known-ish",
    "/v1/caf%C3%A9",
    "/v1/café", // the URL parser encodes it as UTF-8
    "/v1/%E2%82%AC",
    "/v1/%F0%9F%98%80",
    "/v1/100%25",
    "/v1/a%20b",
    "/v1/x?q=%2e%2e%2f;a", // the query is not the path
  ])("%s is allowed under the /v1 rule", async (path) => {
    expect(await judged(path)).toMatchObject({ allowed: true, rule: RULE });
  });

  test("a rule without a prefix is not affected: it allows every path of its host", async () => {
    expect(await judged("/v1/..;/admin", ["https://api.example.com"])).toMatchObject({
      allowed: true,
      rule: "https://api.example.com",
    });
  });

  test("a prefix rule that refuses the path does not hide a later rule that allows it", async () => {
    expect(await judged("/v1/..;/admin", [RULE, "https://api.example.com"])).toMatchObject({
      allowed: true,
      rule: "https://api.example.com",
    });
  });

  test("a path outside every prefix is still the plain no-match", async () => {
    expect(await judged("/v2/..;/x")).toMatchObject({ allowed: false, rule: "manifest:no-match" });
  });
});

describe("operator deny rules with a prefix", () => {
  const HOST = "https://api.example.com";
  const DENY = "https://api.example.com/v1/admin";

  test.each([
    "/x/..;/v1/admin",
    "/v1/admin/x%252e",
    "/v1/%252e%252e/v1/admin",
    "/other/%c0%ae%c0%ae/v1/admin",
    "/v1/admin%2fx",
  ])("%s: an unsafe path could be read as the denied prefix, so the deny rule covers it", async (path) => {
    expect(await judged(path, [HOST], [DENY])).toMatchObject({ allowed: false, rule: `operator:deny ${DENY}` });
  });

  test("a plain path outside the denied prefix is not denied; one under it is", async () => {
    expect(await judged("/v1/x", [HOST], [DENY])).toMatchObject({ allowed: true });
    expect(await judged("/v1/admin/x", [HOST], [DENY])).toMatchObject({
      allowed: false,
      rule: `operator:deny ${DENY}`,
    });
  });

  test("a deny rule of another port, scheme or method does not cover it", async () => {
    expect(
      await judged(
        "/x/..;/v1/admin",
        [HOST],
        [
          "https://api.example.com:8443/v1/admin",
          "http://api.example.com/v1/admin",
          "POST https://api.example.com/v1/admin",
        ],
      ),
    ).toMatchObject({ allowed: true });
  });
});
