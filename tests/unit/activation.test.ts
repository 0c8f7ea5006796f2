import { planActivation, type Candidate } from "../../broker/sessions/activation.js";

const ext = (name: string, more: Partial<Candidate> = {}): Candidate => ({
  name,
  requires: [],
  priority: 0,
  tools: [`${name}_tool`],
  commands: [],
  routes: [],
  compactions: [],
  enabled: true,
  notApproved: null,
  ...more,
});

test("everything wanted, approved and consistent is active, in registry order", () => {
  const plan = planActivation([ext("b"), ext("a"), ext("app", { requires: ["b"] })]);
  expect(plan.active).toEqual(["a", "b", "app"]);
  expect([...plan.inactive]).toEqual([]);
  expect(plan.tools.get("app_tool")).toBe("app");
});

test("a disabled or unapproved extension is inactive, and so is everything that requires it; unrelated ones keep working", () => {
  const plan = planActivation([
    ext("lib", { notApproved: "Extension 'lib' is not approved. Run: tether review lib, then tether approve lib" }),
    ext("mid", { requires: ["lib"] }),
    ext("app", { requires: ["mid"] }),
    ext("off", { enabled: false }),
    ext("solo"),
  ]);
  expect(plan.active).toEqual(["solo"]);
  expect(plan.inactive.get("lib")).toContain("tether approve lib");
  expect(plan.inactive.get("mid")).toBe(
    "needs 'lib' (mid → lib), which is inactive: Extension 'lib' is not approved. Run: tether review lib, then tether approve lib",
  );
  expect(plan.inactive.get("app")).toContain("(app → mid → lib)");
  expect(plan.inactive.get("off")).toBe("disabled in this session");
});

test("a failed boot makes the extension and its dependents inactive with the reason", () => {
  const plan = planActivation([
    ext("weather", { failed: "Satellite 'weather' did not say hello within 10000 ms" }),
    ext("planner", { requires: ["weather"] }),
    ext("echo"),
  ]);
  expect(plan.active).toEqual(["echo"]);
  expect(plan.inactive.get("planner")).toContain(
    "which is inactive: Satellite 'weather' did not say hello within 10000 ms",
  );
});

test("a tool or command name that collides makes the later extension (in registry order) inactive, whole", () => {
  const plan = planActivation([
    ext("zeta", { tools: ["search", "z_only"] }),
    ext("alpha", { tools: ["search"], priority: 0 }),
    ext("cmd1", { tools: [], commands: ["deploy"] }),
    ext("cmd2", { tools: [], commands: ["deploy"] }),
    ext("fan", { requires: ["zeta"] }),
  ]);
  expect(plan.active).toEqual(["alpha", "cmd1"]);
  expect(plan.inactive.get("zeta")).toBe(
    "its tool 'search' collides with 'alpha', which comes earlier in registry order",
  );
  expect(plan.tools.has("z_only")).toBe(false); // whole or not at all
  expect(plan.inactive.get("cmd2")).toBe(
    "its command '/deploy' collides with 'cmd1', which comes earlier in registry order",
  );
  expect(plan.inactive.get("fan")).toContain("requires 'zeta', which is inactive: its tool 'search' collides");
});

test("a route or a compaction strategy name is owned like a tool: the later extension is inactive whole, naming the earlier one", () => {
  const plan = planActivation([
    ext("zed", { routes: ["status", "z_route"], compactions: ["z_fold"] }),
    ext("early", { routes: ["status"] }),
    ext("fold2", { compactions: ["folds"] }),
    ext("fold1", { compactions: ["folds"], priority: -1 }),
    ext("user", { requires: ["fold2"] }),
  ]);
  expect(plan.active).toEqual(["fold1", "early"]);
  expect(plan.inactive.get("zed")).toBe(
    "its route 'status' collides with 'early', which comes earlier in registry order",
  );
  expect(plan.inactive.get("fold2")).toBe(
    "its compaction strategy 'folds' collides with 'fold1', which comes earlier in registry order",
  );
  expect(plan.inactive.get("user")).toBe(
    "requires 'fold2', which is inactive: its compaction strategy 'folds' collides with 'fold1', which comes earlier in registry order",
  );
  // Whole or not at all: the inactive one's other names are nobody's.
  expect([...plan.routes]).toEqual([["status", "early"]]);
  expect([...plan.compactions]).toEqual([["folds", "fold1"]]);
  expect(plan.tools.has("zed_tool")).toBe(false);
});

test("a route and a tool may share a name (they are different kinds); two extensions' distinct routes both stay", () => {
  const plan = planActivation([
    ext("a", { tools: ["status"], routes: ["status"] }),
    ext("b", { routes: ["other"], compactions: ["status"] }),
  ]);
  expect(plan.active).toEqual(["a", "b"]);
  expect(plan.routes.get("other")).toBe("b");
  expect(plan.compactions.get("status")).toBe("b");
});

test("priority decides who keeps a colliding name, before the name does", () => {
  const plan = planActivation([
    ext("alpha", { tools: ["search"], priority: 5 }),
    ext("zeta", { tools: ["search"], priority: 1 }),
  ]);
  expect(plan.active).toEqual(["zeta"]);
  expect(plan.inactive.get("alpha")).toContain("collides with 'zeta'");
});

test("missing and cyclic requirements are named with their chain", () => {
  const plan = planActivation([
    ext("a", { requires: ["b"] }),
    ext("b", { requires: ["a"] }),
    ext("c", { requires: ["ghost"] }),
  ]);
  expect(plan.active).toEqual([]);
  expect(plan.inactive.get("a")).toContain("a → b → a");
  expect(plan.inactive.get("c")).toContain("requires 'ghost', which is not installed");
});
