/**
 * The extension manifest: parsed once, defaults filled, every error naming the
 * file, the line (for TOML syntax) or the field path.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseManifest, readManifest } from "../../broker/install/manifest.js";
import { TetherError } from "../../broker/base/errors.js";
import { HOOK_EVENTS } from "../../jail-runtime/ext/hook.js";

const FILE = "ext/weather/manifest.toml";

const HEAD = `name = "weather"
version = "1.2.3"
description = "Weather for a city"
entry = "src/mod.ts"
`;

/** The install_failed message `text` is refused with; fails the test if it parses. */
function refusal(text: string, file = FILE): string {
  try {
    parseManifest(text, file);
  } catch (err) {
    expect(err).toBeInstanceOf(TetherError);
    expect((err as TetherError).code).toBe("install_failed");
    return (err as TetherError).message;
  }
  throw new Error("Expected the manifest to be refused");
}

describe("parseManifest() on a valid manifest", () => {
  test("parseManifest() fills every default of a minimal manifest", () => {
    expect(parseManifest(HEAD, FILE)).toEqual({
      name: "weather",
      version: "1.2.3",
      description: "Weather for a city",
      entry: "src/mod.ts",
      requires: [],
      priority: 0,
      tool: [],
      hook: [],
      command: [],
      context: [],
      route: [],
      search: [],
      act: [],
      secret: [],
      compaction: [],
      provider: [],
      service: [],
      login: [],
      net: { allow: [] },
      limits: { memory_mb: 128, deadline_ms: 30_000, idle_s: 300, kv_bytes: 1_048_576, fetches: 4, concurrency: 1 },
    });
  });

  test("parseManifest() reads tools, hooks, commands, net and limits, filling the defaults left out", () => {
    const m = parseManifest(
      `${HEAD}requires = ["geo"]

[[tool]]
name = "get_weather"
description = "Current weather"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
deadline_ms = 5000

[[tool]]
name = "forecast"
description = "Five days"

[[hook]]
event = "tool_call"
deadline_ms = 750
on_error = "block"

[[command]]
name = "weather-reset"
description = "Forget the cache"

[net]
allow = ["api.open-meteo.com"]

[limits]
memory_mb = 256
`,
      FILE,
    );
    expect(m.requires).toEqual(["geo"]);
    expect(m.tool).toEqual([
      {
        name: "get_weather",
        description: "Current weather",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        deadline_ms: 5000,
      },
      { name: "forecast", description: "Five days", parameters: { type: "object" } },
    ]);
    expect(m.hook).toEqual([{ event: "tool_call", deadline_ms: 750, on_error: "block" }]);
    expect(m.priority).toBe(0);
    expect(m.command).toEqual([{ name: "weather-reset", description: "Forget the cache", arguments: [] }]);
    expect(m.net).toEqual({ allow: ["api.open-meteo.com"] });
    expect(m.limits).toEqual({
      memory_mb: 256,
      deadline_ms: 30_000,
      idle_s: 300,
      kv_bytes: 1_048_576,
      fetches: 4,
      concurrency: 1,
    });
  });

  test("parseManifest() refuses the built-in extension's reserved name", () => {
    expect(() => parseManifest(HEAD.replace('name = "weather"', 'name = "hooks"'), FILE)).toThrow(
      `${FILE}: name: 'hooks' is reserved for the built-in extension of that name; choose another`,
    );
  });

  test("parseManifest() reads the registry priority and bounds it", () => {
    expect(parseManifest(`${HEAD}priority = -5\n`, FILE).priority).toBe(-5);
    expect(() => parseManifest(`${HEAD}priority = 1.5\n`, FILE)).toThrow(/priority/);
  });

  test("parseManifest() accepts every hook event the SDK knows", () => {
    const rows = HOOK_EVENTS.map((event) => `[[hook]]\nevent = "${event}"\n`).join("\n");
    expect(parseManifest(HEAD + rows, FILE).hook.map((h) => h.event)).toEqual([...HOOK_EVENTS]);
  });

  test.each(["0.0.1", "1.2.3-beta.1", "10.20.30+build.5", "1.0.0-rc.1+sha.abc"])(
    "parseManifest() accepts version %s",
    (version) => {
      expect(parseManifest(HEAD.replace('"1.2.3"', `"${version}"`), FILE).version).toBe(version);
    },
  );

  test("parseManifest() gives each parse its own default objects", () => {
    const a = parseManifest(`${HEAD}[[tool]]\nname = "t"\ndescription = "d"\n`, FILE);
    const b = parseManifest(`${HEAD}[[tool]]\nname = "t"\ndescription = "d"\n`, FILE);
    expect(a.requires).not.toBe(b.requires);
    expect(a.net).not.toBe(b.net);
    expect(a.limits).not.toBe(b.limits);
    expect(a.tool[0]!.parameters).not.toBe(b.tool[0]!.parameters);
    a.requires.push("mutated");
    a.net.allow.push("evil.example");
    expect(parseManifest(HEAD, FILE).requires).toEqual([]);
    expect(parseManifest(HEAD, FILE).net.allow).toEqual([]);
  });
});

describe("parseManifest() errors", () => {
  test("a TOML syntax error names the file, the line and the column", () => {
    expect(refusal(`${HEAD}\nbroken = = 1\n`)).toBe(
      `${FILE} (line 6, column 10): not valid TOML: Invalid TOML document: invalid value`,
    );
  });

  test("a TOML syntax error message is one line", () => {
    expect(refusal(`name = "unterminated\n`)).not.toContain("\n");
  });

  test("every missing required field is named", () => {
    expect(refusal("")).toBe(
      `${FILE}: name: missing; expected "name"; version: missing; expected "version"; description: missing; expected "description"; entry: missing; expected "entry"`,
    );
  });

  test("a bad field inside a table array is named by its path", () => {
    expect(
      refusal(`${HEAD}[[tool]]\nname = "ok"\ndescription = "d"\n\n[[tool]]\nname = "1bad"\ndescription = "d"\n`),
    ).toBe(`${FILE}: tool.1.name: expected a tool name (letters, digits, _ . -, at most 64, starting with a letter)`);
    expect(refusal(`${HEAD}[[tool]]\nname = "get"\n`)).toBe(
      `${FILE}: tool.0.description: missing; expected "description"`,
    );
  });

  test("a tool declared twice is refused, naming it", () => {
    expect(
      refusal(`${HEAD}[[tool]]\nname = "get"\ndescription = "a"\n[[tool]]\nname = "get"\ndescription = "b"\n`),
    ).toBe(`${FILE}: tool 'get' is declared twice`);
  });

  test("a hook declared twice is refused, naming it", () => {
    expect(refusal(`${HEAD}[[hook]]\nevent = "usage"\n[[hook]]\nevent = "usage"\non_error = "note"\n`)).toBe(
      `${FILE}: hook 'usage' is declared twice`,
    );
  });

  // Commands dispatch by name from one table, like tools; a second row with the
  // same name is silently merged away. See the report: BUG manifest-duplicate-command.
  test("a command declared twice is refused, naming it", () => {
    expect(
      refusal(
        `${HEAD}[[command]]\nname = "reset"\ndescription = "a"\n[[command]]\nname = "reset"\ndescription = "b"\n`,
      ),
    ).toBe(`${FILE}: command 'reset' is declared twice`);
  });

  test.each(["1.2", "v1.2.3", "1.2.3.4", "latest", "1.2.x", ""])("version %p is refused as not semver", (version) => {
    expect(refusal(HEAD.replace('"1.2.3"', `"${version}"`))).toBe(
      `${FILE}: version: expected a semver version like 1.2.3`,
    );
  });

  // Semver forbids leading zeros in numeric identifiers ("01.2.3" is not a version).
  // See the report: BUG manifest-semver-leading-zero.
  test("version 01.2.3 is refused as not semver", () => {
    expect(refusal(HEAD.replace('"1.2.3"', '"01.2.3"'))).toBe(`${FILE}: version: expected a semver version like 1.2.3`);
  });

  test("an unknown top-level key is refused, naming it", () => {
    expect(refusal(`${HEAD}permissions = ["all"]\n`)).toBe(
      `${FILE}: permissions: Invalid key: Expected never but received "permissions"`,
    );
  });

  test("an unknown key inside a table is refused with its path", () => {
    expect(refusal(`${HEAD}[limits]\ncpu = 4\n`)).toBe(
      `${FILE}: limits.cpu: Invalid key: Expected never but received "cpu"`,
    );
    expect(refusal(`${HEAD}[[tool]]\nname = "t"\ndescription = "d"\nrun = "rm"\n`)).toBe(
      `${FILE}: tool.0.run: Invalid key: Expected never but received "run"`,
    );
  });

  test("an unknown hook event is refused, naming the field and listing the events", () => {
    const message = refusal(`${HEAD}[[hook]]\nevent = "before_everything"\n`);
    expect(message).toMatch(new RegExp(`^${FILE}: hook\\.0\\.event: Invalid type: Expected \\(`));
    expect(message).toContain('but received "before_everything"');
    for (const event of HOOK_EVENTS) expect(message).toContain(`"${event}"`);
  });

  test("limits out of range are refused with the bound", () => {
    expect(refusal(`${HEAD}[limits]\nmemory_mb = 8\n`)).toBe(
      `${FILE}: limits.memory_mb: Invalid value: Expected >=16 but received 8`,
    );
    expect(refusal(`${HEAD}[limits]\ndeadline_ms = 1.5\n`)).toBe(
      `${FILE}: limits.deadline_ms: Invalid integer: Received 1.5`,
    );
  });

  test("an absolute or non-script entry is refused", () => {
    for (const entry of ["/etc/passwd.ts", "src/mod.py", "src/mod"]) {
      expect(refusal(HEAD.replace('"src/mod.ts"', `"${entry}"`))).toBe(
        `${FILE}: entry: expected a relative path to a .ts or .js file`,
      );
    }
  });

  test("an extension name must be a lowercase identifier", () => {
    expect(refusal(HEAD.replace('"weather"', '"Weather"'))).toBe(
      `${FILE}: name: expected a lowercase name (a-z, 0-9, _ and -, at most 64, starting with a letter)`,
    );
  });

  test("every issue is reported at once, each with its path", () => {
    const message = refusal(`name = "x"\nversion = "1"\ndescription = 5\nentry = "a.ts"\n[limits]\nidle_s = -1\n`);
    expect(message).toBe(
      `${FILE}: version: expected a semver version like 1.2.3; description: Invalid type: Expected string but received 5; limits.idle_s: Invalid value: Expected >=0 but received -1`,
    );
  });
});

describe("readManifest()", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tether-unit-manifest-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test("readManifest() reads <dir>/manifest.toml and names that path in errors", () => {
    writeFileSync(join(dir, "manifest.toml"), HEAD);
    expect(readManifest(dir).name).toBe("weather");
    writeFileSync(join(dir, "manifest.toml"), `${HEAD}bogus = 1\n`);
    expect(() => readManifest(dir)).toThrow(`${join(dir, "manifest.toml")}: bogus: Invalid key`);
  });

  test("readManifest() of a folder with no manifest says so", () => {
    expect(() => readManifest(dir)).toThrow(
      `${join(dir, "manifest.toml")}: cannot read the manifest (is ${dir} an extension folder?)`,
    );
  });
});

describe("[init]", () => {
  test("an empty [init] table takes the 10 s default; deadline_ms is a positive integer; no other key", () => {
    expect(parseManifest(HEAD, FILE).init).toBeUndefined();
    expect(parseManifest(`${HEAD}[init]\n`, FILE).init).toEqual({ deadline_ms: 10_000 });
    expect(parseManifest(`${HEAD}[init]\ndeadline_ms = 2500\n`, FILE).init).toEqual({ deadline_ms: 2500 });
    expect(refusal(`${HEAD}[init]\ndeadline_ms = 0\n`)).toContain("init.deadline_ms");
    expect(refusal(`${HEAD}[init]\nretries = 3\n`)).toContain("init.retries");
  });
});
