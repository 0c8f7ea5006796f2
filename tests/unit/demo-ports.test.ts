/**
 * The fixed loopback ports the example manifests name (their `[net] allow` and secret rules, a
 * provider's `base_url`, a login's endpoints) and `make demo` listens on (broker/demo/ports.ts)
 * lie outside Linux's default ephemeral range (net.ipv4.ip_local_port_range, 32768–60999):
 * inside it, any socket on the machine bound to port 0 or connecting out may be handed one
 * of them while the demo runs, and the demo's service cannot listen (EADDRINUSE). The ports
 * are read from the manifests, so a port added or changed there is checked too.
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEMO_PORTS } from "../../broker/demo/ports.js";
import { rangeClasses } from "../../broker/egress/address-range.js";
import { parseRule, RuleError } from "../../broker/egress/rules.js";
import { readManifest } from "../../broker/install/manifest.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const EPHEMERAL = { first: 32768, last: 60999 };
/** The folders whose manifests name services started on fixed ports: the examples, and the benches' fixtures. */
const ROOTS = ["manifests", "bench/fixtures"];

const inEphemeral = (port: number) => port >= EPHEMERAL.first && port <= EPHEMERAL.last;

/** Every string in a parsed manifest, however deep. */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(stringsOf);
  return [];
}

/** The port of a rule or URL that names a loopback host, as the broker's egress rules read it; else null. */
function loopbackPort(text: string): number | null {
  const url = /^(?:[A-Z,]+ )?(https?:\/\/[^\s?#]+)/i.exec(text.trim());
  if (url === null) return null;
  let rule;
  try {
    rule = parseRule(url[0]);
  } catch (err) {
    if (err instanceof RuleError) return null;
    throw err;
  }
  const loopback =
    (rule.host.kind === "name" && rule.host.name === "localhost") ||
    ((rule.host.kind === "ip" || rule.host.kind === "cidr") && rangeClasses(rule.host.range).includes("loopback"));
  return loopback ? rule.port : null;
}

/** Each loopback port a manifest under ROOTS names, once per manifest folder. */
const declared: Array<{ where: string; port: number }> = ROOTS.flatMap((root) =>
  readdirSync(join(REPO, root), { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(REPO, root, e.name, "manifest.toml")))
    .flatMap((e) => {
      const dir = join(REPO, root, e.name);
      const where = relative(REPO, dir);
      const ports = new Set(stringsOf(readManifest(dir)).map(loopbackPort));
      ports.delete(null);
      return [...ports].map((port) => ({ where, port: port! }));
    }),
);

test("the example manifests name loopback ports (the check below has something to check)", () => {
  expect(declared.map((d) => d.where)).toEqual(
    expect.arrayContaining(["manifests/weather", "manifests/github-issues", "manifests/openai-compatible"]),
  );
});

test("no loopback port a manifest names lies in the ephemeral range 32768–60999", () => {
  expect(declared.filter((d) => inEphemeral(d.port)).map((d) => `${d.where}: ${d.port}`)).toEqual([]);
});

test("the demo listens only on ports the example manifests name, none in the ephemeral range", () => {
  const named = new Set(declared.filter((d) => d.where.startsWith("manifests/")).map((d) => d.port));
  const ports = Object.entries(DEMO_PORTS);
  expect(ports.filter(([, port]) => !named.has(port))).toEqual([]);
  expect(ports.filter(([, port]) => inEphemeral(port))).toEqual([]);
});
