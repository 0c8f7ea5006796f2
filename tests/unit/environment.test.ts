/**
 * The environment at the edge (broker/cli/environment.ts): each TETHER_* variable
 * becomes a broker option, once; a value a variable does not accept is refused,
 * naming the variable and what it takes.
 */
import {
  EnvironmentError,
  readDemoConsoleMs,
  readEnvironment,
  TETHER_VARIABLES,
} from "../../broker/cli/environment.js";

test("an empty environment sets nothing: every option keeps the library's default", () => {
  expect(readEnvironment({})).toEqual({});
  // Empty counts as unset.
  expect(readEnvironment(Object.fromEntries(TETHER_VARIABLES.map((name) => [name, ""])))).toEqual({});
});

test("each variable sets its option", () => {
  expect(
    readEnvironment({
      TETHER_HOME: "/srv/tether",
      TETHER_INSECURE_NO_SANDBOX: "1",
      TETHER_DENO: "/opt/deno",
      TETHER_LOG: "debug",
      TETHER_JAIL_UID: "2000000000",
      TETHER_JAIL_GID: "2000000001",
      TETHER_JAIL_ROOT: "/var/lib/jail",
      TETHER_CGROUP: "v1",
      TETHER_NATIVE_DIR: "/var/cache/tether-native",
      TETHER_OPERATOR: "alice",
      TETHER_BUNDLE_CACHE: "/var/cache/tether-bundles",
    }),
  ).toEqual({
    home: "/srv/tether",
    sandbox: "none",
    deno: "/opt/deno",
    logLevel: "debug",
    jailUid: 2_000_000_000,
    jailGid: 2_000_000_001,
    jailRoot: "/var/lib/jail",
    cgroup: "v1",
    nativeDir: "/var/cache/tether-native",
    operator: "alice",
    bundleCache: "/var/cache/tether-bundles",
  });
  expect(readEnvironment({ TETHER_INSECURE_NO_SANDBOX: "0" })).toEqual({});
  expect(readEnvironment({ TETHER_BUNDLE_CACHE: "off" })).toEqual({ bundleCache: false });
});

test("the approver falls back to USER, then LOGNAME", () => {
  expect(readEnvironment({ USER: "bob", LOGNAME: "carol" })).toEqual({ operator: "bob" });
  expect(readEnvironment({ LOGNAME: "carol" })).toEqual({ operator: "carol" });
  expect(readEnvironment({ TETHER_OPERATOR: "alice", USER: "bob" })).toEqual({ operator: "alice" });
});

test.each([
  [
    "TETHER_INSECURE_NO_SANDBOX",
    "yes",
    "TETHER_INSECURE_NO_SANDBOX must be 1 (run satellites without the OS sandbox: insecure) or 0, not 'yes'",
  ],
  ["TETHER_LOG", "verbose", "TETHER_LOG must be debug, info, warn, error, not 'verbose'"],
  ["TETHER_CGROUP", "v3", "TETHER_CGROUP must be auto, none, v1, v2, not 'v3'"],
  ["TETHER_JAIL_UID", "0", "TETHER_JAIL_UID must be a positive uid other than root, not '0'"],
  ["TETHER_JAIL_UID", "-5", "TETHER_JAIL_UID must be a positive uid other than root, not '-5'"],
  ["TETHER_JAIL_GID", "4294967295", "TETHER_JAIL_GID must be a positive gid other than root, not '4294967295'"],
  ["TETHER_JAIL_GID", "1.5", "TETHER_JAIL_GID must be a positive gid other than root, not '1.5'"],
])("%s=%s is refused, naming the variable and what it accepts", (name, value, message) => {
  let thrown: unknown;
  try {
    readEnvironment({ [name]: value });
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(EnvironmentError);
  expect((thrown as EnvironmentError).message).toBe(message);
  expect((thrown as EnvironmentError).problems).toEqual([{ variable: name, message }]);
});

test("every bad variable is named at once", () => {
  expect(() => readEnvironment({ TETHER_LOG: "loud", TETHER_CGROUP: "v9" })).toThrow(
    "TETHER_LOG must be debug, info, warn, error, not 'loud'; TETHER_CGROUP must be auto, none, v1, v2, not 'v9'",
  );
});

test("TETHER_DEMO_CONSOLE_MS: how long make demo CONSOLE=1 keeps the console up, in ms; not a broker option", () => {
  expect(readDemoConsoleMs({})).toBeUndefined();
  expect(readDemoConsoleMs({ TETHER_DEMO_CONSOLE_MS: "" })).toBeUndefined();
  expect(readDemoConsoleMs({ TETHER_DEMO_CONSOLE_MS: "0" })).toBe(0);
  expect(readDemoConsoleMs({ TETHER_DEMO_CONSOLE_MS: "1500" })).toBe(1500);
  for (const bad of ["1.5", "-1", "1s", "9999999999"]) {
    expect(() => readDemoConsoleMs({ TETHER_DEMO_CONSOLE_MS: bad })).toThrow(
      new EnvironmentError([
        {
          variable: "TETHER_DEMO_CONSOLE_MS",
          message: `TETHER_DEMO_CONSOLE_MS must be a number of milliseconds (0 or more), not '${bad}'`,
        },
      ]),
    );
  }
  expect(readEnvironment({ TETHER_DEMO_CONSOLE_MS: "1500" })).toEqual({});
});
