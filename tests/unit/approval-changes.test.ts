/**
 * How a change committed by another process is found (broker/kernel/approval-changes.ts):
 * before an invocation or capability call the store's data_version is read when the last
 * read is NOTICE_EVERY_MS old or more; a heard stamp (or the fallback timer) reads it at
 * once. The window in which a call can start under the old approvals is exactly that.
 */
import { ApprovalChanges, NOTICE_EVERY_MS } from "../../broker/kernel/approval-changes.js";
import type { Registry } from "../../broker/registry/registry.js";

/**
 * A store whose data_version and registry state the test moves, a clock the test sets, and a
 * registry that only tells.
 */
function fixture() {
  let version = 7;
  let state = 0;
  let clock = 1_000;
  let reads = 0;
  let stateReads = 0;
  let told: (() => void) | undefined;
  const registry = { onChange: (listener: () => void) => ((told = listener), () => {}) } as unknown as Registry;
  const changes = new ApprovalChanges(
    registry,
    { dataVersion: () => (reads++, version), registryState: () => (stateReads++, `approvals #${state}`) },
    () => clock,
  );
  const seen: number[] = [];
  changes.subscribe(() => seen.push(clock));
  return {
    changes,
    seen,
    /** Another process changed an install or an approval. */
    commitElsewhere: () => (version++, state++),
    /** Another process committed something else (its ledger rows): data_version moves, the registry does not. */
    commitOtherElsewhere: () => version++,
    advance: (ms: number) => (clock += ms),
    reads: () => reads,
    stateReads: () => stateReads,
    /** This process's registry wrote (the store's state moves with it) and told. */
    localWrite: () => {
      state++;
      told?.();
    },
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

describe("another process's commit that changes no install or approval", () => {
  test("tells nothing, and reads the registry's state once per move of data_version", () => {
    const f = fixture();
    const before = f.stateReads();
    for (let i = 0; i < 100; i++) {
      f.commitOtherElsewhere();
      f.changes.heard();
    }
    expect(f.seen).toEqual([]);
    expect(f.changes.epoch).toBe(0);
    expect(f.stateReads() - before).toBe(100);
    // data_version standing still: not even the state is read.
    f.changes.heard();
    expect(f.stateReads() - before).toBe(100);
  });

  test("a change among such commits is still told, once", () => {
    const f = fixture();
    f.commitOtherElsewhere();
    f.changes.heard();
    f.commitElsewhere();
    f.commitOtherElsewhere();
    f.changes.heard();
    f.commitOtherElsewhere();
    f.changes.heard();
    expect(f.seen).toHaveLength(1);
  });

  test("after this process's own write, a neighbour's unrelated commit tells nothing more", () => {
    const f = fixture();
    f.localWrite();
    expect(f.seen).toHaveLength(1);
    // The own write moved the registry's state but not data_version (own commits never do):
    // the next foreign commit must compare with the state the own write left.
    f.commitOtherElsewhere();
    f.changes.heard();
    expect(f.seen).toHaveLength(1);
  });
});
