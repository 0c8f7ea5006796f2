/**
 * The idle-CPU meter reads the satellite's CPU once a tick, never per call:
 * only ticks with no invocation open count, and an invocation starts the
 * count afresh.
 */
import { jest } from "@jest/globals";
import { IdleCpuMeter } from "../../broker/satellite/cpu-watch.js";

const budget = { burstMs: 100, share: 0.1, everyMs: 1_000 };

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

function meter() {
  let cpu = 0;
  let reads = 0;
  const exceeded: Array<[number, number]> = [];
  const m = new IdleCpuMeter(
    () => (reads++, cpu),
    budget,
    (used, wall) => exceeded.push([used, wall]),
  );
  return { m, exceeded, spend: (ms: number) => (cpu += ms), reads: () => reads };
}

test("a satellite spinning with no invocation open is stopped once its idle CPU passes the budget", () => {
  const { m, exceeded, spend } = meter();
  jest.advanceTimersByTime(1_000); // the boot's tick: not counted
  spend(250);
  jest.advanceTimersByTime(1_000); // 250 > 100 + 0.1 × 1000
  expect(exceeded).toEqual([[250, 1_000]]);
  spend(500);
  jest.advanceTimersByTime(5_000);
  expect(exceeded).toHaveLength(1); // told once, then stopped
  m.stop();
});

test("a light timer within the share is allowed however long it runs", () => {
  const { m, exceeded, spend } = meter();
  jest.advanceTimersByTime(1_000);
  for (let i = 0; i < 20; i++) {
    spend(90); // 90 ms a second: under 100 + 10 % of the wall at every tick
    jest.advanceTimersByTime(1_000);
  }
  expect(exceeded).toEqual([]);
  m.stop();
});

test("CPU in a tick that saw an invocation never counts, and the count starts afresh after it", () => {
  const { m, exceeded, spend } = meter();
  for (let i = 0; i < 5; i++) {
    m.opened();
    spend(900);
    m.closed();
    jest.advanceTimersByTime(1_000);
  }
  m.opened();
  m.closed();
  spend(250);
  jest.advanceTimersByTime(1_000); // spent after the last answer, in its tick: not metered
  expect(exceeded).toEqual([]);
  spend(250);
  jest.advanceTimersByTime(1_000);
  expect(exceeded).toEqual([[250, 1_000]]);
  m.stop();
});

test("calls cost no reads: only ticks read the CPU", () => {
  const { m, reads } = meter();
  const before = reads();
  for (let i = 0; i < 1_000; i++) {
    m.opened();
    m.closed();
  }
  expect(reads()).toBe(before);
  jest.advanceTimersByTime(3_000);
  expect(reads()).toBe(before + 3);
  m.stop();
});
