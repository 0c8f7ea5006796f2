// Native ESM (execa 9 is ESM-only): run through `node --experimental-vm-modules`.
// ts-jest transpiles each file on its own (isolatedModules); `make typecheck` checks types.
/** @type {import('jest').Config} */
const common = {
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true }] },
  testEnvironment: "node",
  // Libraries that keep process-wide state (execa's signal-exit emitter) outlive one test
  // file's globals; jest 30's default "soft" cleanup then recursed in its setter and broke
  // the next file in that worker. Each file still gets a fresh global object.
  testEnvironmentOptions: { globalsCleanup: "off" },
};
export default {
  // A global option: inside a project it is ignored (and the default is 5 s).
  testTimeout: 60_000,
  // One bundle cache per run (tests/support/bundle-cache-global-setup.mjs).
  globalSetup: "<rootDir>/tests/support/bundle-cache-global-setup.mjs",
  globalTeardown: "<rootDir>/tests/support/bundle-cache-global-teardown.mjs",
  reporters: [
    "default",
    "<rootDir>/tests/support/jail-class-reporter.cjs",
    "<rootDir>/tests/support/summary-reporter.cjs",
  ],
  projects: [
    { ...common, displayName: "unit", testMatch: ["<rootDir>/tests/unit/**/*.test.ts"] },
    { ...common, displayName: "integration", testMatch: ["<rootDir>/tests/integration/**/*.test.ts"] },
    { ...common, displayName: "jail", testMatch: ["<rootDir>/tests/jail/**/*.test.ts"] },
    // Several brokers sharing one PostgreSQL store: one throwaway server per run (tests/support/postgres-global-setup.mjs).
    {
      ...common,
      displayName: "fleet",
      testMatch: ["<rootDir>/tests/fleet/**/*.test.ts"],
      globalSetup: "<rootDir>/tests/support/postgres-global-setup.mjs",
      globalTeardown: "<rootDir>/tests/support/postgres-global-teardown.mjs",
    },
    // Real Chromium (Debian's, driven by playwright-core): tests/support/browser.ts, docs/browser-tests.md.
    {
      ...common,
      displayName: "browser",
      testMatch: ["<rootDir>/tests/browser/**/*.test.ts"],
      globalSetup: "<rootDir>/tests/support/browser-global-setup.mjs",
    },
  ],
};
