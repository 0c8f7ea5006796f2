/**
 * `tether secret set|list|unset`: the values the broker injects into an
 * extension's requests (docs/secrets.md). A value is read from stdin or a
 * file, never from the command line (shell history and `ps` would show it),
 * and is never printed: `list` shows names, whether each is set, and where
 * each may be sent.
 */
import { readFileSync } from "node:fs";
import type { Broker } from "../broker.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { secretPlace, type SecretBinding } from "../registry/grants.js";
import { FileSecrets, secretValueProblem } from "../secrets/store.js";
import { UsageError } from "./command.js";

export type SecretArgs =
  | { readonly action: "set"; readonly extension: string; readonly name: string; readonly file?: string }
  | { readonly action: "unset"; readonly extension: string; readonly name: string }
  | { readonly action: "list"; readonly extension?: string };

const NEVER_ARGV =
  "a secret's value is never taken from the command line (shell history and ps would show it): pipe " +
  "it on stdin, e.g. printf '%s' \"$TOKEN\" | tether secret set <ext> <name>, or use --file <path>";

/** The arguments, or a UsageError saying what is wrong. */
export function parseSecretArgs(args: readonly string[], values: { file?: string }): SecretArgs {
  const [action, extension, name, ...rest] = args;
  if (action === "list") {
    if (name !== undefined)
      throw new UsageError("secret list takes at most an extension name: tether secret list [<ext>]");
    return extension === undefined ? { action } : { action, extension };
  }
  if (action !== "set" && action !== "unset")
    throw new UsageError(`'${action ?? ""}' is not one of set, list, unset: tether secret set <ext> <name>`);
  if (extension === undefined || name === undefined)
    throw new UsageError(`missing the extension and the secret's name: tether secret ${action} <ext> <name>`);
  if (action === "unset") {
    if (rest.length > 0) throw new UsageError("secret unset takes the extension and the secret's name only");
    return { action, extension, name };
  }
  if (rest.length > 0) throw new UsageError(NEVER_ARGV);
  return { action, extension, name, ...(values.file !== undefined ? { file: values.file } : {}) };
}

/** A value as given: one trailing line break (an `echo`, a file's last line) is not part of it. */
function secretFromText(text: string): string {
  return text.replace(/\r?\n$/, "");
}

/** Reads the value: all of stdin when it is a pipe; typed without echo on a terminal. */
async function readValue(file: string | undefined): Promise<string> {
  if (file !== undefined) return secretFromText(readFileSync(file, "utf8"));
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return secretFromText(Buffer.concat(chunks).toString("utf8"));
  }
  return readHidden("Value (not shown; Enter ends it): ");
}

/** One line from the terminal, not echoed. */
function readHidden(prompt: string): Promise<string> {
  process.stderr.write(prompt);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  return new Promise((resolve, reject) => {
    let value = "";
    const done = (err: Error | null) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (err === null) resolve(value);
      else reject(err);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return done(null);
        if (ch === "\u0003" || ch === "\u0004") return done(new UsageError("no value given: nothing was stored"));
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on("data", onData);
    stdin.resume();
  });
}

/** The installed extension's binding of `name`, or an error naming what it declares. */
function declared(broker: Broker, extension: string, name: string): SecretBinding {
  const installed = broker.registry.require(extension);
  const row = installed.manifest.secret.find((s) => s.name === name);
  if (row === undefined) {
    const names = installed.manifest.secret.map((s) => s.name);
    throw new TetherError(
      BrokerCode.notInstalled,
      `'${extension}' declares no secret '${name}' ` +
        `(${names.length === 0 ? "it declares none" : `it declares: ${names.join(", ")}`})`,
    );
  }
  return {
    name: row.name,
    rules: row.rules,
    ...(row.header !== undefined ? { header: row.header } : { query: row.query! }),
    format: row.format,
  };
}

export interface SecretListing {
  readonly extension: string;
  readonly name: string;
  readonly set: boolean;
  readonly approved: boolean;
  readonly sentAs: string;
  readonly rules: readonly string[];
}

/** Runs one `tether secret` action; answers what `--json` prints and the text. */
export async function runSecret(broker: Broker, args: SecretArgs): Promise<{ value: unknown; text: string }> {
  const store = new FileSecrets(broker.home);
  if (args.action === "set") {
    declared(broker, args.extension, args.name);
    const value = await readValue(args.file);
    const problem = secretValueProblem(value);
    if (problem !== null) throw new UsageError(`the value was refused: ${problem}; nothing was stored`);
    store.set(args.extension, args.name, value);
    return {
      value: { extension: args.extension, name: args.name, set: true },
      text: `set ${args.extension}'s secret ${args.name} (in ${store.file(args.extension, args.name)}, mode 0600)`,
    };
  }
  if (args.action === "unset") {
    declared(broker, args.extension, args.name);
    const was = store.unset(args.extension, args.name);
    return {
      value: { extension: args.extension, name: args.name, unset: was },
      text: was
        ? `unset ${args.extension}'s secret ${args.name}`
        : `${args.extension}'s secret ${args.name} was not set`,
    };
  }
  const installs = args.extension === undefined ? broker.registry.list() : [broker.registry.require(args.extension)];
  const rows: SecretListing[] = [];
  for (const installed of installs) {
    if (installed.manifest.secret.length === 0) continue;
    const set = store.names(installed.name);
    const approved = broker.registry.latestApproval(installed.name);
    for (const row of installed.manifest.secret) {
      const binding = declared(broker, installed.name, row.name);
      const granted =
        approved !== null && approved.revokedAt === null && approved.grants.secrets.some((b) => b.name === row.name);
      rows.push({
        extension: installed.name,
        name: row.name,
        set: set.includes(row.name),
        approved: granted,
        sentAs: secretPlace(binding),
        rules: binding.rules,
      });
    }
  }
  const text =
    rows.length === 0
      ? `${args.extension === undefined ? "no installed extension declares" : `${args.extension} declares no`} secrets`
      : rows
          .map(
            (r) =>
              `${r.extension} ${r.name}: ${r.set ? "set" : `NOT SET (tether secret set ${r.extension} ${r.name})`}` +
              `${r.approved ? "" : ", not approved"}\n    sent as ${r.sentAs} to ${r.rules.join(", ")}`,
          )
          .join("\n");
  return { value: rows, text };
}
