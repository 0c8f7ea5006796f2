/**
 * A session's open compiles the argument schemas of the tools it will serve while their satellites boot
 * (the broker mostly waits then), so no tool's first call compiles one.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { toolArgsKey } from "../../broker/base/tool-args.js";
import { Session } from "../../broker/sessions/session.js";
import { envOptions } from "../support/env-options.js";

test("after the open, every served tool's schema is compiled; an extension left out has none", async () => {
  const home = mkdtempSync(join(tmpdir(), "tether-open-precompile-"));
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  let session: Session | undefined;
  try {
    await broker.registry.install(resolve("manifests/echo"));
    broker.registry.approve("echo");
    // Installed, not approved: not served, so not compiled.
    const other = join(home, "other");
    cpSync(resolve("manifests/echo"), other, { recursive: true });
    writeFileSync(
      join(other, "manifest.toml"),
      readFileSync(join(other, "manifest.toml"), "utf8").replace(/^name = "echo"/m, 'name = "other"'),
    );
    await broker.registry.install(other);
    // Loaded first: the boot's turns are then all the compiling waits on.
    await broker.toolArgs.load();
    const keys = (name: string) =>
      ["echo", "count"].map((tool) => toolArgsKey(broker.registry.get(name)!.manifestHash, tool));
    const compiled = (name: string) => keys(name).map((key) => broker.toolArgs.compiled(key));
    expect(compiled("echo")).toEqual([false, false]);
    session = await Session.open(broker, { id: "s1", workspace: home });
    expect(
      session
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["count", "echo"]);
    expect(compiled("echo")).toEqual([true, true]);
    expect(compiled("other")).toEqual([false, false]);
    expect((await session.callTool("echo", '{"text":"hi"}')).outcome.ok).toBe(true);
    const bad = await session.callTool("count", '{"n":"x"}');
    expect(bad.outcome.ok ? null : bad.outcome.error.msg).toBe("tool 'count': expected integer at .n");
  } finally {
    await session?.close();
    await broker.close();
    rmSync(home, { recursive: true, force: true });
  }
});
