/**
 * Refusals past the allowance are counted, not written one by one: the audit
 * keeps every decision as a number, in one row per kind and window.
 */
import { jest } from "@jest/globals";
import { REFUSALS_WRITTEN_PER_WINDOW, REFUSAL_WINDOW_MS, RefusalAudit } from "../../broker/caps/refusal-audit.js";
import type { AuditRow } from "../../broker/store/ledger.js";

// The window is by the clock: frozen here, so a slow machine cannot roll it mid-test.
beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

const row = (capability: string, rule: string): AuditRow => ({
  invocationId: 7,
  sessionId: "s",
  extension: "e",
  capability,
  target: "",
  decision: "denied",
  rule,
  bytes: 0,
});

test("100,000 refusals in one window are 32 rows one by one and one aggregated row per kind, counting the rest", () => {
  const written: AuditRow[] = [];
  const audit = new RefusalAudit((r) => written.push(r));
  for (let i = 0; i < 100_000; i++)
    audit.record(i % 2 === 0 ? row("kv.get", "token") : row("no.such", "unknown-capability"));
  expect(written).toHaveLength(REFUSALS_WRITTEN_PER_WINDOW);
  audit.flush();
  const aggregated = written.slice(REFUSALS_WRITTEN_PER_WINDOW);
  expect(aggregated).toEqual([
    {
      ...row("kv.get", "token"),
      invocationId: null,
      target: `${50_000 - 16} more refused like this within ${REFUSAL_WINDOW_MS} ms (aggregated)`,
      bytes: 50_000 - 16,
    },
    {
      ...row("no.such", "unknown-capability"),
      invocationId: null,
      target: `${50_000 - 16} more refused like this within ${REFUSAL_WINDOW_MS} ms (aggregated)`,
      bytes: 50_000 - 16,
    },
  ]);
  // Every refusal is accounted for: written rows plus the counts.
  expect(REFUSALS_WRITTEN_PER_WINDOW + aggregated.reduce((n, r) => n + r.bytes, 0)).toBe(100_000);
});

test("under the allowance every refusal is its own row, and nothing is left to flush", () => {
  const written: AuditRow[] = [];
  const audit = new RefusalAudit((r) => written.push(r));
  for (let i = 0; i < REFUSALS_WRITTEN_PER_WINDOW; i++) audit.record(row("kv.get", "token"));
  audit.flush();
  expect(written).toHaveLength(REFUSALS_WRITTEN_PER_WINDOW);
  expect(written.every((r) => r.target === "" && r.invocationId === 7)).toBe(true);
});

test("the aggregated row is written when its window ends, without another refusal", () => {
  const written: AuditRow[] = [];
  const audit = new RefusalAudit((r) => written.push(r));
  for (let i = 0; i < REFUSALS_WRITTEN_PER_WINDOW + 5; i++) audit.record(row("kv.get", "token"));
  expect(written).toHaveLength(REFUSALS_WRITTEN_PER_WINDOW);
  jest.advanceTimersByTime(REFUSAL_WINDOW_MS);
  expect(written.at(-1)).toMatchObject({
    bytes: 5,
    target: `5 more refused like this within ${REFUSAL_WINDOW_MS} ms (aggregated)`,
  });
});
