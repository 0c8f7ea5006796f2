/**
 * The review's warning for an allow rule the operator's policy leaves
 * unreachable: which class, what every call is refused as, and the switch.
 */
import { NO_REACH, reachOf } from "../../broker/egress/reach.js";
import { reachWarnings } from "../../broker/egress/rule-reach.js";

const FILE = "/home/op/.tether/policy.toml";

test("a loopback address rule under the default policy: refused operator:no-private until loopback is in [net] reach", () => {
  expect(reachWarnings(["GET http://127.0.0.1:17311/v1"], NO_REACH, FILE)).toEqual([
    {
      rule: "GET http://127.0.0.1:17311/v1",
      class: "loopback",
      refusal: "operator:no-private",
      fix: `add "loopback" to [net] reach in ${FILE} to let approved rules reach loopback addresses`,
    },
  ]);
});

test("a private range names its class; switched on by reach or allow_private, the warning is gone", () => {
  expect(reachWarnings(["http://[10.1.0.0/16]:8080"], NO_REACH, FILE).map((w) => [w.class, w.refusal])).toEqual([
    ["private", "operator:no-private"],
  ]);
  expect(reachWarnings(["http://[10.1.0.0/16]:8080"], reachOf(["private"], [], false), FILE)).toEqual([]);
  expect(reachWarnings(["http://127.0.0.1:1"], reachOf([], [], true), FILE)).toEqual([]);
});

test("a metadata address must be listed one by one; a public name or address is no warning", () => {
  expect(reachWarnings(["http://169.254.169.254"], reachOf([], [], true), FILE).map((w) => w.refusal)).toEqual([
    "operator:no-metadata",
  ]);
  expect(reachWarnings(["http://169.254.169.254"], reachOf([], ["169.254.169.254"], false), FILE)).toEqual([]);
  expect(reachWarnings(["https://api.example.com", "https://93.184.215.14"], NO_REACH, FILE)).toEqual([]);
});

test("localhost as a name: never reached by a name rule; the fix names the address rule to write and the switch", () => {
  const [w] = reachWarnings(["http://localhost:8080/api"], reachOf(["loopback"], [], false), FILE);
  expect(w).toMatchObject({ class: "loopback", refusal: "address:loopback" });
  expect(w!.fix).toContain("http://127.0.0.1:8080/api");
  expect(w!.fix).toContain(`add "loopback" to [net] reach in ${FILE}`);
});
