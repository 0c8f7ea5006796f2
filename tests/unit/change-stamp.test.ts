/** The store's change stamp (broker/store/change-stamp.ts): a touch is heard by a watch on the same store. */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { changeStampPath, touchChangeStamp, watchChangeStamp } from "../../broker/store/change-stamp.js";
import type { Store } from "../../broker/store/open.js";

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "tether-stamp-"))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const storeAt = (path: string) => ({ path }) as unknown as Store;

test("a touch by one writer is heard by the watch of another on the same store", async () => {
  const path = join(dir, "tether.db");
  let stamps = 0;
  const heard = new Promise<void>((resolve) => {
    const stop = watchChangeStamp(storeAt(path), () => {
      stamps++;
      stop();
      resolve();
    });
  });
  // The watch made the stamp so it could watch it.
  expect(existsSync(`${path}-changes`)).toBe(true);
  touchChangeStamp(storeAt(path));
  await heard;
  expect(stamps).toBe(1);
});

test("a stopped watch hears nothing, and a database with no file has no stamp", async () => {
  const path = join(dir, "tether.db");
  let stamps = 0;
  watchChangeStamp(storeAt(path), () => stamps++)();
  touchChangeStamp(storeAt(path));
  // A second watch, still running, shows the touch was delivered.
  await new Promise<void>((resolve) => {
    const stop = watchChangeStamp(storeAt(path), () => (stop(), resolve()));
    touchChangeStamp(storeAt(path));
  });
  expect(stamps).toBe(0);
  for (const memory of [":memory:", "", "file:x?mode=memory"]) {
    expect(changeStampPath(memory)).toBeNull();
    expect(() => touchChangeStamp(storeAt(memory))).not.toThrow();
    expect(watchChangeStamp(storeAt(memory), () => stamps++)).toEqual(expect.any(Function));
  }
});
