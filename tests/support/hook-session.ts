/**
 * Test support for the hook-bus suites: a broker on a fresh temporary home
 * whose names all resolve to loopback (where nothing listens on 443: the policy
 * allows a fetch, so the hooks are asked; one they let through fails to
 * connect), with some fixture extensions installed and approved, and one
 * session open over them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Session } from "../../broker/sessions/session.js";
import { envOptions } from "./env-options.js";

export interface HookSession {
  readonly tmp: string;
  readonly broker: Broker;
  readonly session: Session;
  close(): Promise<void>;
}

export async function openHookSession(
  prefix: string,
  fixtures: string,
  names: readonly string[],
  sessionId: string,
): Promise<HookSession> {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const broker = Broker.open({
    ...envOptions(),
    home: join(tmp, "home"),
    log: createLogger({ level: "error" }),
    resolve: async () => [{ address: "127.0.0.1", family: 4 }],
  });
  writeFileSync(join(broker.home, "policy.toml"), "[net]\nallow_private = true\n");
  for (const name of names) {
    await broker.registry.install(join(fixtures, name));
    broker.registry.approve(name);
  }
  const session = await Session.open(broker, { id: sessionId, workspace: tmp });
  return {
    tmp,
    broker,
    session,
    close: async () => {
      await session.close();
      await broker.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** A tool answer's content as one string: text blocks as they are, JSON blocks serialized. */
export function contentText(outcome: { ok: boolean; value?: unknown }): string {
  const content =
    (outcome.value as { content?: { type: string; text?: string; json?: unknown }[] } | undefined)?.content ?? [];
  return content.map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json))).join("");
}
