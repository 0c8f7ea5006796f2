/**
 * `Session.revision()`: it stands while nothing changes (calls included) and
 * grows with every new active set; and an approval change told while a
 * reload's boots run (after the reload read the installs and approvals) is
 * not lost with the reload's result — the next read notices it.
 */
import type { HookSession } from "../support/hook-session.js";
import { openWrittenSession } from "./support/write-extensions.js";

const SLOW = 120_000;

const EXTENSIONS = {
  main: {
    manifest: `
[[tool]]
name = "run"
description = "Answers ran."
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { run: () => outcome([text("ran")]) };
`,
  },
  docs: {
    manifest: `
[[tool]]
name = "ping"
description = "Answers pong."
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { ping: () => outcome([text("pong")]) };
`,
  },
};

describe("Session.revision", () => {
  let opened: HookSession | undefined;

  afterEach(async () => {
    await opened?.close();
    opened = undefined;
  });

  test(
    "stands through reads and calls, grows with a reload; a revocation told during the reload's boots is noticed after it",
    async () => {
      opened = await openWrittenSession("tether-session-revision-", EXTENSIONS, "r1");
      const { session, broker } = opened;
      const names = () => session.tools().map((t) => t.name);
      const first = session.revision();
      expect(names()).toEqual(["ping", "run"]);
      expect((await session.callTool("run", "{}")).outcome.ok).toBe(true);
      expect(session.revision()).toBe(first);

      session.prefer("main", false);
      await session.reload();
      const without = session.revision();
      expect(without).toBeGreaterThan(first);
      expect(names()).toEqual(["ping"]);

      // The reload reads the installs and approvals as it starts, then boots main; docs is revoked meanwhile.
      session.prefer("main", true);
      const reloading = session.reload();
      expect(broker.registry.revoke("docs")).toBe(true);
      await reloading;
      expect(names()).toEqual(["run"]);
      expect(session.revision()).toBeGreaterThan(without);
      const ping = await session.callTool("ping", "{}");
      expect(ping.outcome.ok ? null : ping.outcome.error.code).toBe("inactive");
      expect((await session.callTool("run", "{}")).outcome.ok).toBe(true);
    },
    SLOW,
  );
});
