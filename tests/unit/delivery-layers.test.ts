/**
 * The operator layer and the delivery layers, re-checked from the source: the
 * operator's actions (broker/operator/) take narrow hosts and import no
 * delivery layer and not the Broker class; the delivery layers (broker/cli/,
 * broker/console/, broker/serve/, broker/mcp/) import the operator layer and
 * never one another, but where a command starts the MCP server; `tether serve`
 * is composed above them (broker/tether-serve/); broker/services/ imports no
 * delivery layer.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { REPO, sourcesUnder } from "./support/repo-files.js";

/** `from -> to` for each relative import of `file` (static, type-only, re-exports and dynamic `import()`), repo-relative .ts paths. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(REPO, file), "utf8"), true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => {
      const to = relative(REPO, resolve(REPO, dirname(file), specifier).replace(/\.js$/, ".ts"))
        .split(sep)
        .join("/");
      return `${file} -> ${to}`;
    });
}

const folderOf = (file: string): string => file.split("/").slice(0, 2).join("/");
const DELIVERY = new Set(["broker/cli", "broker/console", "broker/serve", "broker/mcp"]);
const brokerImports = sourcesUnder("broker").flatMap(importsOf);
const into = (edge: string): string => edge.split(" -> ")[1]!;
const from = (edge: string): string => edge.split(" -> ")[0]!;

/** Where one delivery layer may import another, each with why. */
const MAY_CROSS: Readonly<Record<string, string>> = {
  "broker/cli/commands.ts -> broker/mcp/command.ts": "tether mcp starts the MCP server",
  "broker/cli/dev.ts -> broker/mcp/command.ts": "tether dev --mcp starts the MCP server",
};

describe("the operator layer and the delivery layers", () => {
  test("the scan sees the layers", () => {
    expect(sourcesUnder("broker/operator")).toEqual(
      expect.arrayContaining([
        "broker/operator/approve.ts",
        "broker/operator/audit.ts",
        "broker/operator/publish.ts",
        "broker/operator/review.ts",
        "broker/operator/revoke.ts",
        "broker/operator/status.ts",
        "broker/operator/uninstall.ts",
      ]),
    );
    expect(brokerImports.length).toBeGreaterThan(100);
  });

  test("broker/operator/ imports no delivery layer, no demo and not the Broker class", () => {
    const offending = brokerImports.filter(
      (e) =>
        folderOf(from(e)) === "broker/operator" &&
        (DELIVERY.has(folderOf(into(e))) || folderOf(into(e)) === "broker/demo" || into(e) === "broker/broker.ts"),
    );
    expect(offending).toEqual([]);
  });

  test("a delivery layer imports another only where a server is started or composed", () => {
    const crossing = brokerImports.filter(
      (e) =>
        DELIVERY.has(folderOf(from(e))) && DELIVERY.has(folderOf(into(e))) && folderOf(from(e)) !== folderOf(into(e)),
    );
    expect(crossing.filter((e) => MAY_CROSS[e] === undefined)).toEqual([]);
    // The allow-list matches reality: each entry still crosses.
    expect(Object.keys(MAY_CROSS).filter((e) => !crossing.includes(e))).toEqual([]);
  });

  test("the console and the CLI act through the operator layer", () => {
    const users = new Set(
      brokerImports.filter((e) => folderOf(into(e)) === "broker/operator").map((e) => folderOf(from(e))),
    );
    expect([...users]).toEqual(expect.arrayContaining(["broker/cli", "broker/console", "broker/demo"]));
  });

  test("broker/services/ imports no delivery layer", () => {
    expect(
      brokerImports.filter((e) => folderOf(from(e)) === "broker/services" && DELIVERY.has(folderOf(into(e)))),
    ).toEqual([]);
  });

  test("the server itself builds no route: only the composition of tether serve imports the console, the services and the refresher", () => {
    const composing = (e: string): boolean =>
      ["broker/console", "broker/services"].includes(folderOf(into(e))) || into(e) === "broker/login/refresher.ts";
    expect(brokerImports.filter((e) => folderOf(from(e)) === "broker/serve" && composing(e))).toEqual([]);
    // The rule sees what it is about: the composition does import all three.
    expect(brokerImports.filter((e) => from(e) === "broker/tether-serve/serve-server.ts" && composing(e))).toHaveLength(
      3,
    );
  });
});
