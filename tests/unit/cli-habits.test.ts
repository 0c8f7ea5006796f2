/**
 * The small parts behind the CLI's habits: where JSON text goes wrong (line,
 * column; in agreement with JSON.parse on anything), the nearest word for a
 * typo, colour only on a terminal without NO_COLOR, the tool-argument
 * messages, each extension's bounded log file, and the dev loop's rules (what
 * widens, which homes it refuses).
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { ExtensionLogs, extensionLogFiles, formatLogLine, teeExtensionLogs } from "../../broker/base/extension-logs.js";
import { jsonSyntaxError, parseJsonAt } from "../../broker/base/json-syntax.js";
import { createLogger, type LogLevel } from "../../broker/base/log.js";
import { ToolArgsChecker } from "../../broker/base/tool-args.js";
import { parseCallArgs } from "../../broker/cli/call.js";
import { COLOUR, PLAIN, paintFor } from "../../broker/cli/colour.js";
import { renderAudit } from "../../broker/operator/audit.js";
import { DEV_MARKER, defaultDevHome, devWidens, refuseHome } from "../../broker/cli/dev.js";
import { closest, editDistance } from "../../broker/cli/suggest.js";
import { diffGrants, type Grants } from "../../broker/registry/grants.js";

describe("where JSON goes wrong", () => {
  test.each([
    ['{"text": "hi",}', 1, 15, "unexpected '}' at line 1, column 15 (expected a property name in double quotes)"],
    ['{"text":\n  hi}', 2, 3, "unexpected 'h' at line 2, column 3 (expected a value)"],
    ["", 1, 1, "unexpected end of input at line 1, column 1 (expected a value)"],
    ['{"a": 1', 1, 8, "unexpected end of input at line 1, column 8 (expected ',' or '}')"],
    ["[1, 2", 1, 6, "unexpected end of input at line 1, column 6 (expected ',' or ']')"],
    ["{'a': 1}", 1, 2, "unexpected ''' at line 1, column 2 (expected a property name in double quotes, or '}')"],
    ['{"a" 1}', 1, 6, "unexpected '1' at line 1, column 6 (expected ':' after the property name)"],
    ["01", 1, 2, "unexpected '1' at line 1, column 2 (expected the end of the text after the value)"],
    ["[1.]", 1, 4, "unexpected ']' at line 1, column 4 (expected a digit after '.')"],
    ['"a\\x"', 1, 4, "unexpected 'x' at line 1, column 4 (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"],
    [
      '"line\nbreak"',
      1,
      6,
      "unexpected line break at line 1, column 6 (expected '\"' to close the string (a line break or control character in a string is written \\n, \\t or \\u00XX))",
    ],
    ["tru", 1, 1, "unexpected 't' at line 1, column 1 (expected a value)"],
    ["{} {}", 1, 4, "unexpected '{' at line 1, column 4 (expected the end of the text after the value)"],
  ])("%j", (text, line, column, message) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(jsonSyntaxError(text)).toEqual({ offset: expect.any(Number), line, column, message });
    expect(() => parseJsonAt(text)).toThrow(message);
  });

  test("agrees with JSON.parse on valid documents and on broken ones", () => {
    fc.assert(
      fc.property(fc.json(), fc.nat(), fc.string({ maxLength: 3 }), (json, at, insert) => {
        expect(jsonSyntaxError(json)).toBeNull();
        // A random edit: the scanner finds an error exactly when JSON.parse throws.
        const cut = at % (json.length + 1);
        const broken = json.slice(0, cut) + insert + json.slice(cut + (at % 3));
        let parses = true;
        try {
          JSON.parse(broken);
        } catch {
          parses = false;
        }
        expect(jsonSyntaxError(broken) === null).toBe(parses);
      }),
      { numRuns: 2000 },
    );
  });

  test("a depth that would overflow a recursive parser's stack is scanned", () => {
    const deep = "[".repeat(200_000);
    expect(jsonSyntaxError(deep)).toMatchObject({ line: 1, column: 200_001 });
  });

  test("tether call refuses arguments that are not JSON before anything opens, naming the place", () => {
    expect(parseCallArgs(["echo", "echo", '{"text": "hi",}'], {})).toBe(
      `the arguments are not JSON: unexpected '}' at line 1, column 15 (expected a property name in double quotes). Write them as one quoted word: '{"text": "hi"}'`,
    );
    expect(parseCallArgs(["echo", "echo", '{"text": "hi"}'], {})).toMatchObject({ args: '{"text": "hi"}' });
  });
});

describe("tool-argument messages", () => {
  const schema = {
    type: "object",
    properties: {
      text: { type: "string" },
      where: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
    required: ["text"],
    additionalProperties: false,
  };
  const check = (args: string) => new ToolArgsChecker().check("k", schema, args);

  test("a missing field is named in words; where it is, when not at the top; other messages keep their form", () => {
    expect(check("{}")).toEqual({ ok: false, msg: "missing property 'text'" });
    expect(check('{"text":"a","where":{}}')).toEqual({ ok: false, msg: "missing property 'city' at .where" });
    expect(check('{"text":5}')).toEqual({ ok: false, msg: "expected string at .text" });
    expect(check('{"text":"a","colour":1}')).toEqual({ ok: false, msg: "unexpected field colour at ." });
    expect(check('{"text":')).toEqual({
      ok: false,
      msg: "Arguments are not JSON: unexpected end of input at line 1, column 9 (expected a value)",
    });
  });
});

describe("did you mean", () => {
  const COMMANDS = [
    "install",
    "review",
    "approve",
    "revoke",
    "uninstall",
    "list",
    "call",
    "session",
    "audit",
    "logs",
    "serve",
    "mcp",
    "dev",
    "doctor",
    "help",
  ];

  test("edit distance counts an adjacent swap as one edit", () => {
    expect(editDistance("reveiw", "review")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });

  test.each([
    ["instal", "install"],
    ["reveiw", "review"],
    ["aprove", "approve"],
    ["sesion", "session"],
    ["lsit", "list"],
    ["docter", "doctor"],
    ["inst", "install"],
    ["uninst", "uninstall"],
    ["LIST", "list"],
  ])("%s → %s", (typo, meant) => expect(closest(typo, COMMANDS)).toBe(meant));

  test.each(["frobnicate", "x", "zz", "re"])("%s: nothing near enough (or two as near)", (far) =>
    expect(closest(far, COMMANDS)).toBeNull(),
  );

  test("options too", () => {
    expect(closest("--jsno", ["--json", "--yes", "--home"])).toBe("--json");
    expect(closest("--sesion", ["--session", "--since"])).toBe("--session");
  });
});

describe("colour", () => {
  test("only on a terminal, and not with NO_COLOR or TERM=dumb", () => {
    expect(paintFor({ isTTY: true }, {})).toBe(COLOUR);
    expect(paintFor({ isTTY: false }, {})).toBe(PLAIN);
    expect(paintFor({}, {})).toBe(PLAIN);
    expect(paintFor({ isTTY: true }, { NO_COLOR: "1" })).toBe(PLAIN);
    expect(paintFor({ isTTY: true }, { NO_COLOR: "" })).toBe(COLOUR); // set but empty counts as unset (no-color.org)
    expect(paintFor({ isTTY: true }, { TERM: "dumb" })).toBe(PLAIN);
  });

  test("the audit paints DENIED red and ALLOWED green, and nothing else changes", () => {
    const row = {
      type: "capability" as const,
      at: 0,
      session: "s",
      extension: "e",
      invocation: 1,
      capability: "net.fetch",
      target: "https://x/",
      rule: "r",
      bytes: 0,
    };
    const entries = [
      { ...row, decision: "denied" as const },
      { ...row, decision: "allowed" as const },
    ];
    const painted = renderAudit(entries, COLOUR);
    expect(painted).toContain("→ \u001b[31mDENIED\u001b[39m by r");
    expect(painted).toContain("→ \u001b[32mALLOWED\u001b[39m by r");
    expect(painted.replace(/\u001b\[\d+m/g, "")).toBe(renderAudit(entries));
  });
});

describe("each extension's log file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tether-logs-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("lines about an extension go to its file at every level, beside the logger they tee; others do not", () => {
    const seen: Array<[LogLevel, string]> = [];
    const base = createLogger({ level: "warn", sink: (level, msg) => seen.push([level, msg]) });
    const logs = new ExtensionLogs(join(dir, "logs"));
    const log = teeExtensionLogs(base, logs);
    log.child({ satellite: "echo" }).info("satellite stderr", { line: "hello \u001b[31mred\u001b[0m\rhidden" });
    log.child({ satellite: "echo" }).warn("invocation passed its deadline; killing the satellite", { name: "sleep" });
    log.debug("[echo] a log line", { extension: "echo", session: "cli" });
    log.warn("nothing about an extension");
    const text = readFileSync(join(dir, "logs", "echo.log"), "utf8")
      .trim()
      .split("\n");
    expect(text).toHaveLength(3);
    expect(text[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z stderr: hello \\u001b\[31mred\\u001b\[0m\\u000dhidden$/);
    expect(text[1]).toMatch(/Z warn: invocation passed its deadline; killing the satellite \{"name":"sleep"\}$/);
    expect(text[2]).toMatch(/Z debug: \[echo\] a log line \{"session":"cli"\}$/);
    // The teed logger keeps its own level.
    expect(seen).toEqual([
      ["warn", "invocation passed its deadline; killing the satellite"],
      ["warn", "nothing about an extension"],
    ]);
    expect(readdirSync(join(dir, "logs"))).toEqual(["echo.log"]);
  });

  test("a file is rotated before a line would take it past the bound: at most two files", () => {
    const logs = new ExtensionLogs(dir, 100);
    for (let i = 0; i < 10; i++) logs.append("echo", `line ${i} ${"x".repeat(30)}`);
    const current = readFileSync(join(dir, "echo.log"), "utf8");
    const rotated = readFileSync(join(dir, "echo.log.1"), "utf8");
    expect(Buffer.byteLength(current)).toBeLessThanOrEqual(100);
    expect(Buffer.byteLength(rotated)).toBeLessThanOrEqual(100);
    expect(current).toContain("line 9 ");
    expect(readdirSync(dir).sort()).toEqual(["echo.log", "echo.log.1"]);
  });

  test("a name no extension can have writes nothing and has no file", () => {
    const logs = new ExtensionLogs(dir);
    logs.append("../escape", "x");
    logs.append("Upper", "x");
    expect(readdirSync(dir)).toEqual([]);
    expect(extensionLogFiles(dir, "../escape")).toBeNull();
    expect(extensionLogFiles(dir, "echo")).toEqual({
      current: join(dir, "logs", "echo.log"),
      rotated: join(dir, "logs", "echo.log.1"),
    });
    expect(formatLogLine("info", "m", { extension: "echo" }, 0)).toBe("1970-01-01T00:00:00.000Z info: m");
  });
});

describe("the dev loop's rules", () => {
  const grants: Grants = {
    net: ["https://a.example"],
    tools: ["echo"],
    hooks: [],
    commands: [],
    contexts: [],
    routes: [],
    compactions: [],
    providers: [],
    services: [],
    managed: false,
    observe: [],
    secrets: [],
    limits: { memory_mb: 64, deadline_ms: 5000, idle_s: 300, kv_bytes: 1024, fetches: 4, concurrency: 1 },
    storage: null,
  };

  test("a new egress rule, hook or raised limit widens; new tools and commands, and anything narrower, do not", () => {
    expect(devWidens(diffGrants(grants, { ...grants, tools: ["echo", "shout"], commands: ["go"] }))).toBe(false);
    expect(devWidens(diffGrants(grants, { ...grants, net: [] }))).toBe(false);
    expect(devWidens(diffGrants(grants, { ...grants, limits: { ...grants.limits, memory_mb: 32 } }))).toBe(false);
    expect(devWidens(diffGrants(grants, { ...grants, net: ["https://a.example", "https://b.example"] }))).toBe(true);
    expect(devWidens(diffGrants(grants, { ...grants, hooks: ["tool_call"] }))).toBe(true);
    expect(devWidens(diffGrants(grants, { ...grants, limits: { ...grants.limits, deadline_ms: 6000 } }))).toBe(true);
  });

  test("dev homes live under XDG_STATE_HOME (an absolute one), else ~/.local/state", () => {
    expect(defaultDevHome({ XDG_STATE_HOME: "/s" }, "echo")).toBe("/s/tether-dev/echo");
    expect(defaultDevHome({ XDG_STATE_HOME: "relative" }, "echo")).toMatch(/\/\.local\/state\/tether-dev\/echo$/);
  });

  test("the operator's home and a home it did not make are refused; its own and a new one are not", () => {
    const root = mkdtempSync(join(tmpdir(), "tether-devhome-"));
    try {
      const operator = join(root, "op");
      expect(refuseHome(operator, { TETHER_HOME: operator })).toMatch(/is the operator's home/);
      const foreign = join(root, "foreign");
      mkdirSync(foreign);
      writeFileSync(join(foreign, "tether.db"), "");
      expect(refuseHome(foreign, {})).toMatch(/holds a home tether dev did not make/);
      writeFileSync(join(foreign, DEV_MARKER), "{}");
      expect(refuseHome(foreign, {})).toBeNull();
      expect(refuseHome(join(root, "new"), { TETHER_HOME: operator })).toBeNull();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
