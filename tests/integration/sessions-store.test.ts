/**
 * Session rows and preferences over a real SQLite store (issue 5 groundwork).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../../broker/store/open.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { SessionRecords } from "../../broker/sessions/session-records.js";

let tmp: string;
let store: Store;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "tether-sessions-"));
  store = openStore(join(tmp, "tether.db"));
});
afterEach(() => {
  store.close();
  rmSync(tmp, { recursive: true, force: true });
});

test("a session override beats the global default, which beats the extension's own default", () => {
  const prefs = new Preferences(store);
  expect(prefs.effective("s1", "echo")).toEqual({ enabled: true, source: "default" });
  expect(prefs.effective("s1", "hooks", false)).toEqual({ enabled: false, source: "default" });
  prefs.setGlobal("echo", false);
  expect(prefs.effective("s1", "echo")).toEqual({ enabled: false, source: "global" });
  prefs.setSession("s1", "echo", true);
  expect(prefs.effective("s1", "echo")).toEqual({ enabled: true, source: "session" });
  expect(prefs.effective("s2", "echo")).toEqual({ enabled: false, source: "global" });
  prefs.setSession("s1", "echo", null);
  expect(prefs.effective("s1", "echo")).toEqual({ enabled: false, source: "global" });
  expect(() => prefs.setSession("global", "echo", true)).toThrow("reserved");
});

test("preferences are saved: a new store on the same file sees them", () => {
  new Preferences(store).setSession("s1", "weather", false);
  store.close();
  store = openStore(join(tmp, "tether.db"));
  expect(new Preferences(store).effective("s1", "weather")).toEqual({ enabled: false, source: "session" });
});

test("sessions open with a workspace and a policy, reopen keeping their id, and close", () => {
  const records = new SessionRecords(store);
  const opened = records.open("s-1", "/work/a", { offline: true });
  expect(opened).toMatchObject({ id: "s-1", workspace: "/work/a", policy: { offline: true }, closedAt: null });
  records.close("s-1");
  expect(records.get("s-1")?.closedAt).toEqual(expect.any(Number));
  const again = records.open("s-1", "/work/b", { allow: ["https://api.example.com"] });
  expect(again).toMatchObject({
    workspace: "/work/b",
    policy: { allow: ["https://api.example.com"] },
    closedAt: null,
    openedAt: opened.openedAt,
  });
  expect(() => records.open("../etc", "/x")).toThrow("expected a session id");
  expect(records.get("nope")).toBeNull();
});

test("a stored policy that no longer parses reads as offline", () => {
  const records = new SessionRecords(store);
  records.open("s2", "/w");
  store.sqlite.prepare("update sessions set policy = ? where id = ?").run('{"offline":"yes"}', "s2");
  expect(records.get("s2")?.policy).toEqual({ offline: true });
});
