/**
 * What a manifest must pass beyond its schema (broker/install/manifest.ts):
 * each tool's `parameters` compiles as JSON Schema, and each `[net] allow`
 * rule parses and is not too broad to mean anything. Every problem is listed,
 * each naming the file, the field and the tool or rule.
 */
import type { Ajv } from "ajv";
import { ajvClass } from "../base/ajv.js";
import { parseRule, RuleError } from "../egress/rules.js";
import type { Manifest } from "./manifest.js";
import { actSchemaProblems } from "./act-row.js";

/** Each tool whose `parameters` does not compile as JSON Schema (with `ajv`, default a fresh one). */
export function toolSchemaProblems(
  manifest: Manifest,
  file: string,
  ajv: Ajv = new (ajvClass())({ allErrors: true, strict: false }),
): string[] {
  const problems: string[] = [];
  for (const [i, tool] of manifest.tool.entries()) {
    try {
      ajv.compile(tool.parameters);
    } catch (err) {
      problems.push(
        `${file}: tool.${i}.parameters (tool '${tool.name}') is not a valid JSON Schema: ${(err as Error).message}`,
      );
    }
  }
  return problems;
}

/** Each `[net] allow` rule that does not parse or is too broad. */
export function netRuleProblems(manifest: Manifest, file: string): string[] {
  const problems: string[] = [];
  for (const [i, rule] of manifest.net.allow.entries()) {
    try {
      parseRule(rule);
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      problems.push(`${file}: net.allow.${i}: ${err.message}`);
    }
  }
  return problems;
}

/** Both: every problem of the manifest past its schema. */
export function manifestProblems(manifest: Manifest, file: string, ajv?: Ajv): string[] {
  return [
    ...toolSchemaProblems(manifest, file, ajv),
    ...actSchemaProblems(manifest.act, file, ajv),
    ...netRuleProblems(manifest, file),
  ];
}
