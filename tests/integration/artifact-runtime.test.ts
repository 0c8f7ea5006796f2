/**
 * What an artifact carries besides the extension's own modules: the satellite runtime and valibot,
 * nothing else. In particular no msgpackr (the satellite frames with its own msgpack code,
 * `jail-runtime/cap/framing.ts`): its first `typeof Buffer` would load Deno's Node compatibility layer
 * at every boot, and its code would be parsed and cached for each one.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { envOptions } from "../support/env-options.js";

const ECHO = resolve("manifests/echo");

/** The module each `// path` marker esbuild wrote into the artifact names. */
function modulesOf(artifact: string): string[] {
  const out = new Set<string>();
  for (const line of artifact.split("\n")) {
    const marker = /^\/\/ (\S+)$/.exec(line);
    if (marker !== null && !marker[1]!.startsWith("@")) out.add(marker[1]!);
  }
  return [...out].sort();
}

test("an artifact carries the runtime, valibot and its own modules, and no other package", async () => {
  const home = mkdtempSync(join(tmpdir(), "tether-artifact-runtime-"));
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  try {
    await broker.registry.install(ECHO);
    const modules = modulesOf(readFileSync(broker.registry.get("echo")!.artifactPath, "utf8"));
    expect(modules).toContain("index.ts");
    expect(modules.some((m) => m.endsWith("jail-runtime/cap/framing.ts"))).toBe(true);
    const others = modules.filter(
      (m) =>
        !/(^|\/)jail-runtime\/(cap|ext|wire)\/[\w-]+\.ts$/.test(m) &&
        !/(^|\/)node_modules\/valibot\//.test(m) &&
        m !== "index.ts" &&
        !m.startsWith("tether-entry:"),
    );
    expect(others).toEqual([]);
  } finally {
    await broker.close();
    rmSync(home, { recursive: true, force: true });
  }
});
