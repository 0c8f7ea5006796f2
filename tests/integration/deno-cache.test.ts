/**
 * The per-artifact Deno cache over real jailed boots: the first boot of an
 * approved artifact warms it once; later boots run on private copies and never
 * write the original.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { DENO_CACHE_FILES, findBwrap } from "../../broker/jail/sandbox.js";
import { createLogger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const bwrapTest = findBwrap() === null ? test.skip : test;

bwrapTest(
  "one warm-up per artifact; later boots answer from private copies and leave the original untouched",
  async () => {
    const home = mkdtempSync(join(tmpdir(), "tether-deno-cache-"));
    const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
    try {
      await broker.registry.install(join(REPO, "manifests/echo"));
      broker.registry.approve("echo");
      const root = join(home, "cache", "deno");
      const call = (session: string) => broker.callTool("echo", "echo", '{"text":"hi"}', { session });

      expect((await call("a")).ok).toBe(true);
      const [entry, ...others] = readdirSync(root);
      expect(others).toEqual([]);
      expect(entry).toMatch(new RegExp(`^${broker.registry.require("echo").artifactHash.slice(0, 32)}-[0-9a-f]{16}$`));
      const dir = join(root, entry!);
      expect(
        readdirSync(dir)
          .filter((f) => DENO_CACHE_FILES.includes(f as never))
          .sort(),
      ).toEqual([...DENO_CACHE_FILES].sort());
      expect(readdirSync(dir).filter((f) => f.endsWith("-wal") || f.endsWith("-shm"))).toEqual([]);
      const digest = () =>
        DENO_CACHE_FILES.map((f) =>
          createHash("sha256")
            .update(readFileSync(join(dir, f)))
            .digest("hex"),
        );
      const before = digest();

      for (const session of ["b", "c", "d"]) expect((await call(session)).ok).toBe(true);
      expect(digest()).toEqual(before);
      expect(readdirSync(root)).toEqual([entry]);
    } finally {
      await broker.close();
      rmSync(home, { recursive: true, force: true });
    }
  },
);

bwrapTest(
  "the warm-up boot cannot write anything else to the host: localStorage and the Cache API stay on the jail's tmpfs",
  async () => {
    const home = mkdtempSync(join(tmpdir(), "tether-deno-cache-"));
    const src = join(home, "src");
    mkdirSync(src);
    writeFileSync(
      join(src, "manifest.toml"),
      'name = "hoarder"\nversion = "1.0.0"\ndescription = "Stores what it can at load."\nentry = "index.ts"\n\n[[tool]]\nname = "stored"\ndescription = "What localStorage holds."\n',
    );
    writeFileSync(
      join(src, "index.ts"),
      [
        'import { outcome, text, type Tool } from "@tether/ext";',
        "// At load, during the warm-up boot too: storage that needs no permission.",
        'localStorage.setItem("hoard", "x".repeat(1_000_000));',
        'const cache = await caches.open("hoard");',
        'await cache.put("https://example.com/hoard", new Response("y".repeat(1_000_000)));',
        'export const tools: Record<string, Tool> = { stored: () => outcome([text(String(localStorage.getItem("hoard")?.length ?? 0))]) };',
      ].join("\n"),
    );
    const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
    try {
      await broker.registry.install(src);
      broker.registry.approve("hoarder");
      const outcome = await broker.callTool("hoarder", "stored", "{}", { session: "a" });
      expect(outcome.ok).toBe(true);
      const root = join(home, "cache", "deno");
      const [entry] = readdirSync(root);
      expect(readdirSync(join(root, entry!)).sort()).toEqual([...DENO_CACHE_FILES].sort());
    } finally {
      await broker.close();
      rmSync(home, { recursive: true, force: true });
    }
  },
);
