// Native ESM (execa 9 is ESM-only): run through `node --experimental-vm-modules`.
// ts-jest transpiles each file on its own (isolatedModules); `make typecheck` checks types.
/** @type {import('jest').Config} */
const common = {
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true }] },
  testEnvironment: "node",
  testTimeout: 60_000,
};
export default {
  reporters: ["default", "<rootDir>/tests/support/summary-reporter.cjs"],
  projects: [
    { ...common, displayName: "unit", testMatch: ["<rootDir>/tests/unit/**/*.test.ts"] },
    { ...common, displayName: "integration", testMatch: ["<rootDir>/tests/integration/**/*.test.ts"] },
    { ...common, displayName: "jail", testMatch: ["<rootDir>/tests/jail/**/*.test.ts"] },
  ],
};
