/**
 * `tether dev` and `tether logs` through the real binary (`node bin/tether.js`,
 * no terminal on stdin): a dev loop on a copy of manifests/echo picks up an
 * edit (a new tool, written into index.ts and the manifest) and the new tool is
 * callable through the dev home; what the tool wrote to stderr is in
 * `tether logs`, and `tether logs -f` prints the next such line as it is
 * written; a widening (a new egress rule) stops with the diff and is not
 * approved; the operator's home is never touched, and refused as a dev home.
 *
 * Every wait is for an event: a line the loop prints, a line `logs -f` prints,
 * a process's exit.
 */
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { execa, type ResultPromise } from "execa";
import { REPO } from "../support/satellites.js";
import { passedEnv } from "../support/env-options.js";

const BIN = join(REPO, "bin", "tether.js");
/** Per test: tsx start-ups, bundles and satellite boots, on a machine that may be loaded. */
const SLOW = 240_000;

interface Run {
  readonly code: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/** The lines a running process prints on one stream, and a wait for the first (new) line matching a pattern. */
class Lines {
  readonly seen: string[] = [];
  #partial = "";
  #waiters: Array<{ pattern: RegExp; from: number; resolve: (line: string) => void; reject: (err: Error) => void }> =
    [];
  #ended: string | null = null;

  constructor(stream: NodeJS.ReadableStream, done: Promise<unknown> | null, what: string) {
    stream.setEncoding("utf8");
    stream.on("end", () => {
      this.#ended ??= `${what}'s output ended`;
      this.#check();
    });
    stream.on("data", (chunk: string) => {
      const parts = (this.#partial + chunk).split("\n");
      this.#partial = parts.pop() ?? "";
      for (const line of parts) this.seen.push(line);
      this.#check();
    });
    void done?.finally(() => {
      this.#ended = `${what} exited`;
      this.#check();
    });
  }

  /** Resolves with the first line matching `pattern` printed after line `from` (default: any so far); rejects if the process ends first. */
  wait(pattern: RegExp, from = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#waiters.push({ pattern, from, resolve, reject });
      this.#check();
    });
  }

  #check(): void {
    this.#waiters = this.#waiters.filter((w) => {
      const found = this.seen.slice(w.from).find((line) => w.pattern.test(line));
      if (found !== undefined) w.resolve(found);
      else if (this.#ended !== null)
        w.reject(
          new Error(
            `${this.#ended} before printing a line matching ${w.pattern}; it printed:\n${this.seen.join("\n")}`,
          ),
        );
      else return true;
      return false;
    });
  }
}

function env(root: string): Record<string, string> {
  return { TETHER_HOME: join(root, "operator-home"), XDG_STATE_HOME: join(root, "state") };
}

async function tether(root: string, ...args: string[]): Promise<Run> {
  const result = await execa(process.execPath, [BIN, ...args], {
    env: env(root),
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 90_000,
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

/** `tether dev <src> …args` running, and its stdout's lines. */
function startDev(root: string, src: string, ...args: string[]): { dev: ResultPromise; out: Lines } {
  const dev: ResultPromise = execa(process.execPath, [BIN, "dev", src, ...args], {
    env: env(root),
    cwd: REPO,
    stdin: "ignore",
    reject: false,
  });
  return { dev, out: new Lines(dev.stdout!, dev, "tether dev") };
}

/** Copies manifests/echo into `root`/src/echo. */
function copyEcho(root: string): string {
  const dir = join(root, "src", "echo");
  mkdirSync(join(root, "src"), { recursive: true });
  cpSync(join(REPO, "manifests", "echo"), dir, { recursive: true });
  return dir;
}

const SHOUT_TOOL = `
[[tool]]
name = "shout"
description = "Says it louder, and tells stderr."
parameters = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
`;

const SHOUT_CODE = `
export const louder: Record<string, Tool> = {
  shout: (args) => {
    const { text: said } = decodeArgs(v.object({ text: v.string() }), args);
    console.error(\`shouting \${said}\`);
    return outcome([text(said.toUpperCase())]);
  },
};
`;

/** Adds the shout tool to the copy's code and manifest. */
function addShout(src: string): void {
  const index = join(src, "index.ts");
  const code = readFileSync(index, "utf8");
  const withShout = code.replace(
    "export const tools: Record<string, Tool> = {",
    `${SHOUT_CODE}\nexport const tools: Record<string, Tool> = {\n  ...louder,`,
  );
  expect(withShout).not.toBe(code);
  writeFileSync(index, withShout);
  appendFileSync(join(src, "manifest.toml"), SHOUT_TOOL);
}

describe("tether dev", () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "tether-dev-"));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  test(
    "rebuilds on an edit and serves the new tool through the dev home; its stderr is in tether logs (-f follows); a widening stops with the diff",
    async () => {
      const src = copyEcho(root);
      const devHome = join(root, "state", "tether-dev", "echo");
      const { dev, out } = startDev(root, src);
      try {
        await out.wait(/^Watching /);
        expect(out.seen).toEqual(
          expect.arrayContaining([
            `dev home: ${devHome} (its own: never the operator's)`,
            "approved echo 1.0.0 in the dev home for what it requests (no egress; no hooks)",
            `Try it:  tether call --home ${devHome} echo echo '{}'`,
          ]),
        );
        expect(out.seen.find((l) => l.startsWith("built in"))).toMatch(/^built in \d+ ms; tools: echo, count$/);

        // The edit: a new tool in the code and in the manifest.
        const edited = out.seen.length;
        addShout(src);
        const rebuilt = await out.wait(/^rebuilt in \d+ ms; tools: .*\bshout\b/, edited);
        expect(rebuilt).toMatch(/^rebuilt in \d+ ms; tools: echo, count, shout$/);

        const shout = await tether(root, "call", "--home", devHome, "echo", "shout", '{"text":"hi"}');
        expect(shout).toMatchObject({ code: 0, stdout: "HI" });
        const logs = await tether(root, "logs", "--home", devHome, "echo");
        expect(logs.code).toBe(0);
        expect(logs.stderr.split("\n")[0]).toBe(
          "tether logs: echo's log lines; its calls, refusals and capability decisions: tether audit --ext echo",
        );
        expect(logs.stdout.split("\n")).toContainEqual(
          expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z stderr: shouting hi$/),
        );

        // -f: started now, it prints the end of the file, then the next line when a call writes it.
        const follow: ResultPromise = execa(process.execPath, [BIN, "logs", "-f", "--home", devHome, "echo"], {
          env: env(root),
          cwd: REPO,
          stdin: "ignore",
          reject: false,
        });
        const followed = new Lines(follow.stdout!, follow, "tether logs -f");
        try {
          await followed.wait(/stderr: shouting hi$/);
          const again = await tether(root, "call", "--home", devHome, "echo", "shout", '{"text":"again"}');
          expect(again).toMatchObject({ code: 0, stdout: "AGAIN" });
          await followed.wait(/ stderr: shouting again$/);
        } finally {
          follow.kill("SIGTERM");
          expect((await follow).exitCode).toBe(0);
        }

        // A widening: a new egress rule. The build is installed, not approved; the diff says why.
        const widened = out.seen.length;
        appendFileSync(join(src, "manifest.toml"), '\n[net]\nallow = ["https://api.example.com"]\n');
        // Whichever comes first: a rebuild that ran would be the bug.
        const outcome = await out.wait(/^not approved|^rebuilt/, widened);
        expect(outcome).toMatch(/^not approved \(no terminal to ask on; the build is installed but does not run\)/);
        const stopped = out.seen.slice(widened);
        expect(stopped).toEqual(
          expect.arrayContaining([
            "echo 1.0.0 asks for more than was approved in the dev home:",
            "  + network: https://api.example.com",
            "  + tool: shout",
          ]),
        );
        expect(stopped.some((l) => l.startsWith("rebuilt"))).toBe(false);
        const refused = await tether(root, "call", "--home", devHome, "echo", "echo", '{"text":"x"}');
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain("Extension 'echo' changed since it was approved");
      } finally {
        dev.kill("SIGTERM");
      }
      const ended = await dev;
      expect(ended.exitCode).toBe(0);
      expect(out.seen).toContain("tether dev: stopping");
      // The operator's home was never opened.
      expect(existsSync(join(root, "operator-home"))).toBe(false);
    },
    SLOW,
  );

  test(
    "approving a rule the policy leaves unreachable says so, with the switch, as review would",
    async () => {
      const src = copyEcho(join(root, "policy"));
      appendFileSync(join(src, "manifest.toml"), '\n[net]\nallow = ["http://127.0.0.1:8080/api"]\n');
      const devHome = join(root, "policy", "dev-home");
      const { dev, out } = startDev(root, src, "--home", devHome);
      try {
        await out.wait(/^Watching /);
        const file = join(devHome, "policy.toml");
        expect(out.seen).toEqual(
          expect.arrayContaining([
            `warning: http://127.0.0.1:8080/api: every call to it is refused (operator:no-private) under ${file}: ` +
              `add "loopback" to [net] reach in ${file} to let approved rules reach loopback addresses`,
            "warning: an operator's home refuses these the same way unless its policy.toml reaches them (tether review says so there)",
          ]),
        );
      } finally {
        dev.kill("SIGTERM");
      }
      expect((await dev).exitCode).toBe(0);
    },
    SLOW,
  );

  test(
    "refuses the operator's home and a home it did not make, before opening anything",
    async () => {
      const src = copyEcho(join(root, "refusals"));
      const made = join(root, "made-by-install");
      const install = await tether(root, "install", "--home", made, src);
      expect(install.code).toBe(0);
      const [operator, foreign, notFolder] = await Promise.all([
        tether(root, "dev", src, "--home", join(root, "operator-home")),
        tether(root, "dev", src, "--home", made),
        tether(root, "dev", join(root, "nope")),
      ]);
      expect(operator.code).toBe(2);
      expect(operator.stderr).toContain(
        `tether dev: ${join(root, "operator-home")} is the operator's home; tether dev never installs or approves there`,
      );
      expect(foreign.code).toBe(2);
      expect(foreign.stderr).toContain(`${made} holds a home tether dev did not make (no tether-dev.json)`);
      expect(notFolder.code).toBe(2);
      expect(notFolder.stderr).toContain("is not a folder");
      expect(existsSync(join(root, "operator-home"))).toBe(false);
    },
    SLOW,
  );

  test(
    "--mcp serves the dev session to an MCP client on stdio; an edit reaches it as a changed tool list",
    async () => {
      const src = copyEcho(join(root, "mcp"));
      const devHome = join(root, "mcp", "dev-home");
      const passed: Record<string, string> = { ...passedEnv(), TETHER_HOME: join(root, "operator-home") };
      for (const key of ["PATH", "HOME"]) if (process.env[key] !== undefined) passed[key] = process.env[key]!;
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, "dev", src, "--mcp", "--home", devHome],
        env: passed,
        cwd: REPO,
        stderr: "pipe",
      });
      const err = new Lines(transport.stderr as Readable, null, "tether dev --mcp");
      const changed: Tool[][] = [];
      let sawChange: (() => void) | null = null;
      const client = new Client(
        { name: "tether-dev-test", version: "1.0.0" },
        {
          listChanged: {
            tools: {
              autoRefresh: true,
              debounceMs: 0,
              onChanged: (error, tools) => {
                if (error === null && tools !== null) changed.push(tools);
                sawChange?.();
              },
            },
          },
        },
      );
      const errors: Error[] = [];
      client.onerror = (e) => errors.push(e);
      await client.connect(transport);
      try {
        expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["count", "echo"]);
        // The loop's own lines are on stderr: stdout is the MCP channel.
        expect(err.seen).toContain(`Serving session 'dev' over MCP on stdio (the client's stdin closing stops it).`);
        expect(err.seen.find((l) => l.startsWith("built in"))).toMatch(/tools: echo, count$/);

        const hasShout = () => changed.some((tools) => tools.some((t) => t.name === "shout"));
        const shoutListed = new Promise<void>((resolve) => {
          sawChange = () => {
            if (hasShout()) resolve();
          };
        });
        const from = err.seen.length;
        addShout(src);
        await err.wait(/^rebuilt in \d+ ms; tools: echo, count, shout$/, from);
        await shoutListed;
        const result = (await client.callTool({ name: "shout", arguments: { text: "hi" } })) as CallToolResult;
        expect(result.content).toEqual([{ type: "text", text: "HI" }]);
        expect(errors).toEqual([]);
      } finally {
        await client.close();
      }
      await err.wait(/^tether dev: stopping$/);
    },
    SLOW,
  );

  test(
    "--serve runs tether serve on the dev home until SIGTERM",
    async () => {
      const src = copyEcho(join(root, "serve"));
      const devHome = join(root, "serve", "dev-home");
      const dev: ResultPromise = execa(
        process.execPath,
        [BIN, "dev", src, "--serve", "--port", "0", "--home", devHome],
        { env: env(root), cwd: REPO, stdin: "ignore", reject: false },
      );
      const out = new Lines(dev.stdout!, dev, "tether dev --serve");
      try {
        const listening = await out.wait(/^tether serve: listening on /);
        expect(listening).toMatch(/^tether serve: listening on ws:\/\/127\.0\.0\.1:\d+/);
        expect(listening).toContain(`(token file: ${join(devHome, "serve.token")})`);
        expect(existsSync(join(devHome, "serve.token"))).toBe(true);
      } finally {
        dev.kill("SIGTERM");
      }
      expect((await dev).exitCode).toBe(0);
      expect(out.seen).toContain("tether dev: stopping");
    },
    SLOW,
  );
});
