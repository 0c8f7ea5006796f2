/**
 * The real `tether mcp --http 0` on a fresh home where the conformance fixture
 * (tests/integration/fixtures/conformance) is installed and approved through
 * the library; what it printed, its port and its token.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { execa, type ResultPromise } from "execa";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { envOptions } from "./env-options.js";
import { REPO } from "./satellites.js";
import { until } from "./wait.js";

const BIN = join(REPO, "bin", "tether.js");
const FIXTURE = join(REPO, "tests/integration/fixtures/conformance");

export interface McpHttpChild {
  readonly port: number;
  readonly token: string;
  /** The endpoint that carries the token (for clients that send no headers). */
  readonly capabilityUrl: string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM, and its exit code. */
  stop(): Promise<number | undefined>;
}

export async function startMcpHttp(root: string, session: string, waitMs: number): Promise<McpHttpChild> {
  const home = join(root, "home");
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    const { installed } = await broker.registry.install(FIXTURE);
    broker.registry.approve(installed.manifest.name);
  } finally {
    await broker.close();
  }
  const child: ResultPromise = execa(
    process.execPath,
    [BIN, "mcp", "--home", home, "--session", session, "--http", "0"],
    {
      cwd: REPO,
      stdin: "ignore",
      reject: false,
      env: { TETHER_LOG: "error" },
    },
  );
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const capability = /for a client that sends no headers: (\S+)/;
  await until("tether mcp listening", () => capability.test(stderr) || child.exitCode !== null, waitMs);
  const url = capability.exec(stderr)?.[1];
  if (url === undefined) throw new Error(`tether mcp --http did not start: ${stderr}`);
  return {
    port: Number(new URL(url).port),
    token: readFileSync(join(home, "mcp.token"), "utf8").trim(),
    capabilityUrl: url,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      return (await child).exitCode;
    },
  };
}
