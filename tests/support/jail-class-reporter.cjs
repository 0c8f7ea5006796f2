// The jail suite by class (docs/jail.md, "Threat model"): after a run that
// included tests/jail/, one table of every class — which cases probe it and
// their verdicts — so `make jail-test` ends with the threat model's state.
const { basename } = require("node:path");

// Escape-suite cases by id (tests/jail/cases.ts): [last id of the range, class].
const ESCAPE_RANGES = [
  [21, "filesystem"],
  [25, "environment"],
  [30, "processes"],
  [31, "signals"],
  [33, "the runtime"],
  [34, "privilege"],
  [60, "network"],
  [67, "the runtime"],
  [73, "filesystem"],
  [80, "the wire"],
  [81, "processes"],
  [86, "/proc and /sys"],
  [87, "devices"],
  [90, "the runtime"],
  [91, "filesystem"],
  [93, "/proc and /sys"],
  [94, "devices"],
  [96, "IPC"],
  [98, "memory"],
  [99, "CPU"],
  [101, "/proc and /sys"],
];
const FILE_CLASSES = {
  "descriptors.test.ts": "descriptors",
  "seccomp.test.ts": "syscalls",
  "runtime-integrity.test.ts": "the runtime",
  "install-confinement.test.ts": "the bundler",
  "type-check-confinement.test.ts": "host-side work",
  "host-jobs.test.ts": "host-side work",
};
const RESOURCE_CLASSES = [
  [/^privilege/, "privilege"],
  [/^memory/, "memory"],
  [/^\/proc/, "/proc and /sys"],
  [/^CPU/, "CPU"],
  [/^disk/, "disk"],
];

function classOf(file, ancestors, title) {
  const name = basename(file);
  if (name === "escape.test.ts") {
    const m = /^J(\d+)-/.exec(title);
    if (!m || title.includes("with no OS sandbox")) return null; // table checks and control runs
    return ESCAPE_RANGES.find(([last]) => Number(m[1]) <= last)?.[1] ?? "unclassified";
  }
  if (name === "resources.test.ts")
    return RESOURCE_CLASSES.find(([re]) => re.test(ancestors[0] ?? ""))?.[1] ?? "unclassified";
  return FILE_CLASSES[name] ?? null;
}

class JailClassReporter {
  onRunComplete(_contexts, results) {
    const byClass = new Map();
    for (const file of results.testResults) {
      if (!file.testFilePath.includes("/tests/jail/")) continue;
      for (const t of file.testResults) {
        const klass = classOf(file.testFilePath, t.ancestorTitles, t.title);
        if (klass === null) continue;
        if (!byClass.has(klass)) byClass.set(klass, []);
        const verdict = t.status === "passed" ? "held" : t.status === "failed" ? "FAILED" : t.status;
        byClass
          .get(klass)
          .push({ title: t.title.split(":")[0].slice(0, 60), verdict, where: basename(file.testFilePath) });
      }
    }
    if (byClass.size === 0) return;
    const lines = [
      "",
      "jail escape suite by class (docs/jail.md, Threat model):",
      "class            cases  held  failed  where",
    ];
    for (const [klass, cases] of [...byClass].sort(([a], [b]) => a.localeCompare(b))) {
      const held = cases.filter((c) => c.verdict === "held").length;
      const failed = cases.filter((c) => c.verdict === "FAILED").length;
      const where = [...new Set(cases.map((c) => c.where))].join(", ");
      lines.push(
        `${klass.padEnd(16)} ${String(cases.length).padStart(5)} ${String(held).padStart(5)} ${String(failed).padStart(7)}  ${where}`,
      );
    }
    lines.push("", "verdict per case:");
    for (const [klass, cases] of [...byClass].sort(([a], [b]) => a.localeCompare(b))) {
      for (const c of cases) lines.push(`  ${klass.padEnd(16)} ${c.verdict.padEnd(7)} ${c.title}`);
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  }
}
module.exports = JailClassReporter;
