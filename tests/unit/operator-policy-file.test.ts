/**
 * policy.toml's problems name the key (`tether doctor` prints them; a broker
 * refuses all egress until they are fixed): an unknown key lists what its
 * table takes, a TOML error gives its line and column, every problem is listed.
 */
import { parseOperatorPolicy } from "../../broker/caps/policy.js";

const problem = (text: string) => {
  try {
    parseOperatorPolicy(text, "policy.toml");
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("parsed");
};

test("an unknown key in [net] is named, with the keys [net] takes", () => {
  expect(problem("[net]\nalow_private = true\n")).toBe(
    "policy.toml: net.alow_private: unknown key; [net] takes deny, reach, metadata, allow_private, max_body_bytes, max_fetches, max_request_bytes, max_redirects",
  );
});

test("an unknown table is named, with the tables the file has", () => {
  expect(problem("[sattelites]\nmax_concurrency = 2\n")).toBe(
    "policy.toml: [sattelites]: unknown table; policy.toml has [net], [satellites], [fleet]",
  );
});

test("every problem is listed, each with its key; a TOML error gives line and column", () => {
  const all = problem('[net]\nreach = ["lopback"]\nmax_redirects = 99\n');
  expect(all).toContain("net.reach.0: must be one of");
  expect(all).toContain("net.max_redirects: ");
  expect(problem("[net\nx = 1\n")).toMatch(/^policy\.toml \(line 1, column \d+\): not valid TOML: /);
});

test("a valid file parses", () => {
  expect(
    parseOperatorPolicy('[net]\nreach = ["loopback"]\n[satellites]\nmax_concurrency = 2\n', "policy.toml")
      .maxConcurrency,
  ).toBe(2);
});
