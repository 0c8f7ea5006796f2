/**
 * The `tether` command line.
 */
import { runChecks } from "./doctor.js";

const HELP = `tether — run untrusted agent extensions in jailed Deno satellites

Usage: tether <command> [options]

Commands:
  doctor        Check Deno, the sandbox layers and what is active
  help          Show this help

Exit codes: 0 ok, 1 a check or command failed, 2 bad usage.`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(HELP);
      return 0;
    case "doctor": {
      const checks = runChecks();
      if (rest.includes("--json")) console.log(JSON.stringify(checks, null, 2));
      else for (const c of checks) console.log(`${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`);
      return checks.every((c) => c.ok) ? 0 : 1;
    }
    default:
      console.error(`tether: unknown command '${command}'. Run 'tether help'`);
      return 2;
  }
}
