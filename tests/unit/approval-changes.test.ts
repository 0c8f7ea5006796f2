/**
 * How a change committed by another process is found (broker/kernel/approval-changes.ts):
 * before an invocation or capability call the store's data_version is read when the last
 * read is NOTICE_EVERY_MS old or more; a heard stamp (or the fallback timer) reads it at
 * once. The window in which a call can start under the old approvals is exactly that.
 */
import { ApprovalChanges, NOTICE_EVERY_MS } from "../../broker/kernel/approval-changes.js";
import type { Registry } from "../../broker/registry/registry.js";

/** A store whose data_version the test moves, a clock the test sets, and a registry that only tells. */
function fixture() {
  let version = 7;
  let clock = 1_000;
  let reads = 0;
  let told: (() => void) | undefined;
  const registry = { onChange: (listener: () => void) => ((told = listener), () => {}) } as unknown as Registry;
  const changes = new ApprovalChanges(
    registry,
    () => (reads++, version),
    () => clock,
  );
  const seen: number[] = [];
  changes.subscribe(() => seen.push(clock));
  return {
    changes,
    seen,
    commitElsewhere: () => version++,
    advance: (ms: number) => (clock += ms),
    reads: () => reads,
    localWrite: () => told?.(),
  };
}

describe("another process's change", () => {
  test("a call that starts NOTICE_EVERY_MS or more after the last read sees it; one within that window may not", () => {
    const f = fixture();
    f.commitElsewhere();
    // The last read was at construction: a call starting sooner than the window does not look.
    for (let ms = 0; ms < NOTICE_EVERY_MS; ms += 0.5) {
      f.changes.notice();
      expect(f.seen).toEqual([]);
      f.advance(0.5);
    }
    // At the window's end it looks, and tells once.
    f.changes.notice();
    expect(f.seen).toHaveLength(1);
    f.advance(NOTICE_EVERY_MS * 3);
    f.changes.notice();
    expect(f.seen).toHaveLength(1);
  });

  test("calls in a burst read data_version at most once per window", () => {
    const f = fixture();
    const before = f.reads();
    for (let i = 0; i < 1_000; i++) {
      f.changes.notice();
      f.advance(0.01);
    }
    // 1,000 calls over 10 ms: one read per NOTICE_EVERY_MS, not one per call.
    expect(f.reads() - before).toBeLessThanOrEqual(Math.ceil(10 / NOTICE_EVERY_MS) + 1);
    expect(f.reads() - before).toBeGreaterThanOrEqual(Math.floor(10 / NOTICE_EVERY_MS) - 1);
  });

  test("a heard stamp looks at once, inside the window too", () => {
    const f = fixture();
    f.changes.notice();
    f.commitElsewhere();
    f.changes.heard();
    expect(f.seen).toHaveLength(1);
    // Nothing new: hearing again tells nothing.
    f.changes.heard();
    expect(f.seen).toHaveLength(1);
  });

  test("this process's own writes are told at once, without a read", () => {
    const f = fixture();
    const before = f.reads();
    f.localWrite();
    expect(f.seen).toHaveLength(1);
    expect(f.changes.epoch).toBe(1);
    expect(f.reads()).toBe(before);
  });
});
