/**
 * `Session.revision()`: it stands while nothing changes (calls included) and
 * grows with every new active set; and an approval change told while a
 * reload's or an open's boots run (after it read the installs and approvals)
 * is not lost with its result — the next read notices it. An approval lost after a call's
 * look at the approvals, before its extension's satellite starts for it (a
 * revocation while a hook runs, an artifact changed on disk), is the call's
 * answer (`not_approved`), not a rejection.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Session } from "../../broker/sessions/session.js";
import { envOptions } from "../support/env-options.js";
import type { HookSession } from "../support/hook-session.js";
import { type ExtensionFiles, openWrittenSession, writeExtensions } from "./support/write-extensions.js";

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

/**
 * `extensions` installed and approved on a broker of a fresh home whose log revokes an extension when a line
 * holds `revoke <name> now`, and a session opened over them (which `body` gets with what was revoked); all of
 * it closed and removed after.
 */
async function withRevokingLog(
  extensions: Readonly<Record<string, ExtensionFiles>>,
  body: (session: Session, revoked: readonly boolean[], broker: Broker) => Promise<void>,
): Promise<void> {
  const fixtures = writeExtensions("tether-session-revision-ext-", extensions);
  const tmp = mkdtempSync(join(tmpdir(), "tether-session-revision-"));
  const revoked: boolean[] = [];
  const broker: Broker = Broker.open({
    ...envOptions(),
    home: join(tmp, "home"),
    log: createLogger({
      level: "info",
      sink: (_level, msg) => {
        const asked = /revoke (\w+) now/.exec(msg);
        if (asked !== null) revoked.push(broker.registry.revoke(asked[1]!));
      },
    }),
  });
  let session: Session | undefined;
  try {
    for (const name of Object.keys(extensions)) {
      await broker.registry.install(join(fixtures, name));
      broker.registry.approve(name);
    }
    session = await Session.open(broker, { id: "s1", workspace: tmp });
    await body(session, revoked, broker);
  } finally {
    await session?.close();
    await broker.close();
    rmSync(tmp, { recursive: true, force: true });
    rmSync(fixtures, { recursive: true, force: true });
  }
}

test(
  "a revocation told while the open's boots run (after it read the approvals) is noticed at the first read",
  async () => {
    // main's initializer runs during the open's activation, after the plan was made from the approvals
    // (docs active): its log line has the broker revoke docs before the open applies that plan.
    const main: ExtensionFiles = {
      manifest: `${EXTENSIONS.main.manifest}
[init]
`,
      code: `${EXTENSIONS.main.code}
import { callCap } from "@tether/cap";
import type { Init } from "@tether/ext";
export const init: Init = async () => {
  await callCap("log", { level: "info", msg: "revoke docs now" });
};
`,
    };
    await withRevokingLog({ main, docs: EXTENSIONS.docs }, async (session, revoked) => {
      expect(revoked).toEqual([true]);
      expect(session.tools().map((t) => t.name)).toEqual(["run"]);
      const ping = await session.callTool("ping", "{}");
      expect(ping.outcome.ok ? null : ping.outcome.error.code).toBe("inactive");
      expect((await session.callTool("run", "{}")).outcome.ok).toBe(true);
    });
  },
  SLOW,
);

test(
  "a revocation told while a call's tool_call hook runs: the call answers not_approved, it does not reject",
  async () => {
    // guard's hook logs a line, which the broker's log hears (and revokes main on), and answers only once
    // the broker answered that very capability call: main's approval is gone before its satellite is asked.
    const guard: ExtensionFiles = {
      manifest: `
[[hook]]
event = "tool_call"
`,
      code: `import { callCap } from "@tether/cap";
import { hook } from "@tether/ext";
export const tools = {};
export const hooks = {
  tool_call: hook("tool_call", async () => {
    await callCap("log", { level: "info", msg: "revoke main now" });
    return {};
  }),
};
`,
    };
    await withRevokingLog({ main: EXTENSIONS.main, guard }, async (session, revoked) => {
      const report = await session.callTool("run", "{}");
      expect(revoked).toEqual([true]);
      expect(report.outcome).toEqual({
        ok: false,
        error: {
          code: "not_approved",
          msg: "Extension 'main' was revoked. Run: tether review main, then tether approve main to allow it again",
        },
      });
      const again = await session.callTool("run", "{}");
      expect(again.outcome.ok ? null : again.outcome.error.code).toBe("inactive");
    });
  },
  SLOW,
);

test(
  "an artifact changed on disk while no satellite runs: the call and the command answer not_approved, not a rejection",
  async () => {
    const main: ExtensionFiles = {
      manifest: `${EXTENSIONS.main.manifest}
[[command]]
name = "hello"
description = "Answers hello."
`,
      code: `${EXTENSIONS.main.code}
import type { Command } from "@tether/ext";
export const commands: Record<string, Command> = { hello: () => outcome([text("hello")]) };
`,
    };
    await withRevokingLog({ main }, async (session, _revoked, broker) => {
      expect((await session.runCommand("/hello")).outcome.ok).toBe(true);
      // Its satellite stopped; the next call starts one from the artifact, which no longer matches its approval.
      await broker.deactivate(session.id, "main");
      writeFileSync(broker.registry.get("main")!.artifactPath, "// not what was approved\n");
      const call = await session.callTool("run", "{}");
      const command = await session.runCommand("/hello");
      for (const outcome of [call.outcome, command.outcome]) {
        expect(outcome.ok ? null : outcome.error.code).toBe("not_approved");
        expect(outcome.ok ? null : outcome.error.msg).toMatch(/^The artifact of 'main' /);
      }
    });
  },
  SLOW,
);

test(
  "an extension active with no satellite up: its search provider stays listed, and a search boots it",
  async () => {
    const finder: ExtensionFiles = {
      manifest: `
[[search]]
name = "notes"
description = "One note."
`,
      code: `import type { SearchProvider } from "@tether/ext";
export const tools = {};
export const search: Record<string, SearchProvider> = { notes: () => [{ title: "the note", snippet: "found" }] };
`,
    };
    await withRevokingLog({ finder }, async (session, _revoked, broker) => {
      const listed = () => session.searchProviders().providers.map((p) => `${p.extension}/${p.name}`);
      expect(listed()).toEqual(["finder/notes"]);
      await broker.deactivate(session.id, "finder");
      expect(listed()).toEqual(["finder/notes"]);
      const found = await session.search("note");
      expect(found.results.map((r) => r.title)).toEqual(["the note"]);
    });
  },
  SLOW,
);

test(
  "an observer whose approval was revoked is left out of the next event, not sent it to fail",
  async () => {
    const watcher: ExtensionFiles = {
      manifest: `
[observe]
events = ["turn"]
`,
      code: `import type { Observer } from "@tether/ext";
export const tools = {};
export const observe: Observer = () => {};
`,
    };
    await withRevokingLog({ watcher }, async (session, _revoked, broker) => {
      session.observers.notify("turn", { n: 1 });
      await session.observers.idle();
      expect(session.observers.counters("watcher")).toMatchObject({ delivered: 1, failed: 0 });
      expect(broker.registry.revoke("watcher")).toBe(true);
      session.observers.notify("turn", { n: 2 });
      await session.observers.idle();
      expect(session.observers.counters("watcher")).toBeNull();
    });
  },
  SLOW,
);
