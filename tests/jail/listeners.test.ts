/**
 * The escape suite's listeners prove their own worth: a connection or datagram
 * sent before `settle()` is counted by the time it returns, and the sentinels
 * themselves never are.
 */
import { createSocket } from "node:dgram";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Listeners } from "./harness.js";

let dir: string;
let listeners: Listeners;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tether-listeners-"));
  listeners = new Listeners(dir);
  await listeners.start();
});

afterEach(async () => {
  await listeners.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("settle() with nothing sent leaves every count at zero, however often it runs", async () => {
  for (let i = 0; i < 3; i++) await listeners.settle();
  expect(listeners.hits).toEqual({ http: 0, udp: 0, unix: 0, abstract: 0, permissionBroker: 0 });
});

test("what was sent just before settle() is counted when it returns: each kind of listener", async () => {
  // Fired and not awaited, as an escape's would be from inside the jail.
  request({ host: "127.0.0.1", port: listeners.httpPort, agent: false })
    .on("error", () => undefined)
    .end();
  for (const path of [listeners.unixPath, `\0${listeners.abstractName}`, listeners.permissionBrokerPath]) {
    connect({ path }).on("error", () => undefined);
  }
  const udp = createSocket("udp4");
  udp.send("hello", listeners.udpPort, "127.0.0.1", () => udp.close());
  await listeners.settle();
  expect(listeners.hits).toEqual({ http: 1, udp: 1, unix: 1, abstract: 1, permissionBroker: 1 });
});

test("a connection that sends bytes which are not the sentinel's stays a hit", async () => {
  const client = connect({ path: listeners.unixPath }, () => client.write("x".repeat(64)));
  client.on("error", () => undefined);
  await listeners.settle();
  expect(listeners.hits.unix).toBe(1);
  client.destroy();
});
