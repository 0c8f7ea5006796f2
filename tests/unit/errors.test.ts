/**
 * The error catalogue: every code the code can produce is documented in
 * docs/errors.md, and the doc names no code the code does not have.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BROKER_CODES, BrokerCode, TetherError, WIRE_CODES, WireCode } from "../../broker/base/errors.js";
import { ProtocolError, type ProtocolErrorCode } from "../../jail-runtime/wire/frame-check.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DOC = readFileSync(resolve(REPO, "docs/errors.md"), "utf8");

/**
 * Every ProtocolErrorCode, as a value. `satisfies` makes tsc fail when the union
 * gains a code that is missing here, or loses one that is still listed.
 */
const PROTOCOL_CODES = Object.keys({
  frame_too_large: true,
  malformed_frame: true,
  truncated_frame: true,
  unexpected_frame: true,
} satisfies Record<ProtocolErrorCode, true>) as ProtocolErrorCode[];

interface Row {
  readonly code: string;
  readonly cells: readonly string[];
}

/** The rows of the table under the `## <heading>` section, keyed by their backticked code. */
function table(heading: string): Row[] {
  const sections = DOC.split(/^## /m);
  const section = sections.find((s) => s.startsWith(`${heading}\n`));
  if (section === undefined) throw new Error(`docs/errors.md has no '## ${heading}' section`);
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const cells = line
        .slice(1, line.trimEnd().endsWith("|") ? line.trimEnd().length - 1 : undefined)
        .split("|")
        .map((c) => c.trim());
      const code = /^`([a-z0-9_]+)`$/.exec(cells[0] ?? "")?.[1];
      if (code === undefined) throw new Error(`Cannot read a code from the row: ${line}`);
      return { code, cells };
    });
}

const sorted = (codes: Iterable<string>): string[] => [...codes].sort();

describe("the code catalogue", () => {
  test("wire codes and broker codes are distinct, so a code means one thing", () => {
    const wire = new Set<string>(WIRE_CODES);
    expect(BROKER_CODES.filter((c) => wire.has(c))).toEqual([]);
    expect(PROTOCOL_CODES.filter((c) => wire.has(c) || (BROKER_CODES as readonly string[]).includes(c))).toEqual([]);
  });

  test("every code is snake_case and listed once", () => {
    for (const codes of [WIRE_CODES, BROKER_CODES, PROTOCOL_CODES]) {
      expect(new Set(codes).size).toBe(codes.length);
      for (const code of codes) expect(code).toMatch(/^[a-z]+(?:_[a-z]+)*$/);
    }
  });

  test("WIRE_CODES and BROKER_CODES list every value of their code objects", () => {
    expect(sorted(WIRE_CODES)).toEqual(sorted(Object.values(WireCode)));
    expect(sorted(BROKER_CODES)).toEqual(sorted(Object.values(BrokerCode)));
  });

  test("the seed's codes keep their words", () => {
    expect(WireCode).toMatchObject({
      refused: "refused",
      unknownTool: "unknown_tool",
      unhandled: "unhandled",
      mismatchedHook: "mismatched_hook",
      badArguments: "bad_arguments",
      badKind: "bad_kind",
      busy: "busy",
      crashed: "crashed",
      timeout: "timeout",
      denied: "denied",
      tokenRevoked: "token_revoked",
    });
  });

  test("TetherError and ProtocolError carry their code and a stable name", () => {
    const broker = new TetherError(BrokerCode.installFailed, "m.toml: bad");
    expect(broker).toBeInstanceOf(Error);
    expect(broker.name).toBe("TetherError");
    expect(broker.code).toBe("install_failed");
    expect(broker.message).toBe("m.toml: bad");
    expect(new ProtocolError("truncated_frame", "x").code).toBe("truncated_frame");
  });
});

describe("docs/errors.md", () => {
  test.each([
    ["Wire codes", WIRE_CODES],
    ["Broker codes", BROKER_CODES],
    ["Protocol violations", PROTOCOL_CODES],
  ] as const)("the '%s' table documents exactly the codes in the code", (heading, codes) => {
    const documented = table(heading).map((r) => r.code);
    expect(new Set(documented).size).toBe(documented.length);
    // Missing rows (code without doc) and stale rows (doc without code) both show here.
    expect(sorted(documented)).toEqual(sorted(codes));
  });

  test.each(["Wire codes", "Broker codes", "Protocol violations"])(
    "every row of the '%s' table says who mints it, what it means and what to do",
    (heading) => {
      const header = DOC.split(/^## /m)
        .find((s) => s.startsWith(`${heading}\n`))
        ?.split("\n")
        .find((line) => line.startsWith("| Code"));
      expect(header).toBe("| Code | Minted by | Meaning | What to do |");
      for (const row of table(heading)) {
        expect({ code: row.code, cells: row.cells.length }).toEqual({ code: row.code, cells: 4 });
        for (const cell of row.cells)
          expect({ code: row.code, empty: cell === "" }).toEqual({ code: row.code, empty: false });
      }
    },
  );

  test("no backticked snake_case code appears in a table's first column outside the three tables", () => {
    const all = [...DOC.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]);
    const known = new Set<string>([...WIRE_CODES, ...BROKER_CODES, ...PROTOCOL_CODES]);
    expect(all.filter((c) => c === undefined || !known.has(c))).toEqual([]);
    expect(all).toHaveLength(WIRE_CODES.length + BROKER_CODES.length + PROTOCOL_CODES.length);
  });
});
