/**
 * Bundling an extension folder, as the broker does it: never in its own
 * process. The folder is copied, within its bounds, into a snapshot
 * (folder-snapshot.ts); esbuild and the confinement plugin (bundle-core.ts)
 * run in a host-side jail (jail/host-job.ts) that shows the snapshot at the
 * folder's real path, the SDK and the packages it imports at theirs, all
 * read-only, and nothing else of the host: no other file, no network, not
 * the broker's uid. The artifact comes back on stdout; the sources it was
 * built from are read from the snapshot by the broker.
 */
import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import { lstatSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import * as v from "valibot";
import { basename, isAbsolute, join, relative } from "node:path";
import { BrokerCode, TetherError } from "../base/errors.js";
import { orNull } from "../base/or-null.js";
import { jobFailure, placed, runHostJob, type HostJob, type HostJobSetup } from "../jail/host-job.js";
import { binaryKey } from "../jail/identity.js";
import { jobScript } from "../jail/job-scripts.js";
import { resolveSandbox } from "../jail/sandbox.js";
import {
  BundleOutput,
  bundleKey,
  keepBundle,
  keptBundle,
  openBundleCache,
  treeStamp,
  type KeptAnswer,
} from "./bundle-cache.js";
import { runtimeRoot, type Artifact } from "./bundle-core.js";
import { snapshotFolder, type FolderSnapshot } from "./folder-snapshot.js";
import type { Manifest } from "./manifest.js";
import { sdkPackageDirs } from "./sdk-packages.js";
import type { SourceFile } from "./source-file.js";

export {
  ARTIFACT_BUILD_OPTIONS,
  readArtifact,
  runtimeRoot,
  SDK_ALIASES,
  type Artifact,
} from "./bundle-core.js";
export type { SourceFile } from "./source-file.js";

/** A bundle gets this long. */
export const BUNDLE_DEADLINE_MS = 120_000;
/** And this much memory (esbuild's and Node's, together). */
export const BUNDLE_MEMORY_BYTES = 1024 * 2 ** 20;
/** The most an answer (the artifact, as JSON) may hold. */
const ANSWER_BYTES = 64 * 2 ** 20;

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

let esbuildPath: string | undefined;
/** esbuild's native binary for this platform: the bundling jail gets a copy of it; found once. */
function esbuildBinary(): string {
  esbuildPath ??= realpathSync(
    createRequire(import.meta.url).resolve(`@esbuild/${process.platform}-${process.arch}/bin/esbuild`),
  );
  return esbuildPath;
}

/** Jail paths a folder must not sit on: the jail's own (a bind there would hide them). */
const JAIL_OWN = ["/opt/tether", "/proc", "/dev", "/lib", "/lib64", "/usr", "/bin", "/sbin", "/etc", "/run/tether"];

/**
 * The host folders a jailed job over `root` sees, each at its own
 * path: the snapshot, the SDK, its packages. Outer ones first.
 */
export function folderBinds(root: string, snapshot: FolderSnapshot): HostJob["binds"] {
  if (JAIL_OWN.some((own) => inside(own, root) || inside(root, own))) {
    throw new TetherError(
      BrokerCode.installFailed,
      `${root}: an extension folder cannot be at or ` +
        `around ${JAIL_OWN.find((own) => inside(own, root) || inside(root, own))}; move it (under your home, say)`,
    );
  }
  const sdk = runtimeRoot();
  const binds = [
    { host: snapshot.dir, jail: root },
    { host: sdk, jail: sdk },
    ...sdkPackageDirs(sdk).map((dir) => ({ host: dir, jail: dir })),
  ];
  return binds.sort((a, b) => a.jail.split("/").length - b.jail.split("/").length);
}

/** The bundling jail over `snapshot` of the folder at `root`: Node with the bundling script and esbuild's binary. */
export function bundleJob(root: string, snapshot: FolderSnapshot, setup: HostJobSetup): HostJob {
  const sandbox = resolveSandbox(setup.sandbox);
  return {
    label: "bundle",
    runtime: "node",
    script: jobScript("bundle-job"),
    args: [],
    // With no OS sandbox the job reads the folder where it is (the snapshot still bounded it).
    binds: sandbox === "bwrap" ? folderBinds(root, snapshot) : [],
    files: [{ host: esbuildBinary(), jail: "/opt/tether/esbuild" }],
    env: { ESBUILD_BINARY_PATH: placed(sandbox, { host: esbuildBinary(), jail: "/opt/tether/esbuild" }) },
    // An operator's step, not an extension's call: it may use the machine's CPUs.
    cpus: availableParallelism(),
    memoryBytes: BUNDLE_MEMORY_BYTES,
    jail: setup.jail ?? {},
    sandbox,
  };
}

/** Bundles `dir` (whose manifest is `manifest`) into one ESM artifact for Deno, in the bundling jail. */
export async function bundleExtension(dir: string, manifest: Manifest, setup: HostJobSetup = {}): Promise<Artifact> {
  let root: string;
  try {
    root = realpathSync(dir);
  } catch {
    throw new TetherError(
      BrokerCode.installFailed,
      `${dir}: no such folder (give the folder that holds manifest.toml)`,
    );
  }
  const snapshot = snapshotFolder(root, setup.jail?.identity);
  try {
    const job = bundleJob(root, snapshot, setup);
    const request = { root, sdk: runtimeRoot(), manifest, problems: snapshot.problems };
    // The cache is an optimisation: anything wrong with it is a miss, never a failed bundle.
    const cache = job.sandbox === "bwrap" ? openBundleCache(setup.bundleCache) : null;
    const key = cache === null ? null : orNull(() => jobKey(job, setup, request, snapshot));
    const kept = cache === null || key === null ? null : keptBundle(cache, key);
    const answer = kept ?? (await runBundleJob(job, request, manifest));
    if (cache !== null && key !== null && kept === null) orNull(() => keepBundle(cache, key, answer));
    const code = answer.code;
    const sources = answer.sources.map((path) => sourceFromSnapshot(snapshot, path));
    return { code, sha256: createHash("sha256").update(code).digest("hex"), sources };
  } finally {
    snapshot.remove();
  }
}

/** The bundling job's answer, or the install error that says why there is none. */
async function runBundleJob(job: HostJob, request: object, manifest: Manifest): Promise<KeptAnswer> {
  const r = await runHostJob(job, JSON.stringify(request), BUNDLE_DEADLINE_MS, ANSWER_BYTES);
  let answer: unknown;
  try {
    answer = JSON.parse(r.stdout.toString("utf8"));
  } catch {
    throw new TetherError(
      BrokerCode.installFailed,
      `Cannot bundle '${manifest.name}': ${jobFailure(job, r, BUNDLE_DEADLINE_MS)}`,
    );
  }
  const failed = v.safeParse(BundleFailure, answer);
  if (failed.success) throw new TetherError(BrokerCode.installFailed, failed.output.message);
  const bundle = v.safeParse(BundleOutput, answer);
  if (!bundle.success)
    throw new TetherError(
      BrokerCode.installFailed,
      `Cannot bundle '${manifest.name}': the bundling jail's answer is not a bundle`,
    );
  return bundle.output;
}

/** A bundling job's failure: the message it gives the author. */
const BundleFailure = v.object({ ok: v.literal(false), message: v.string() });

/**
 * What the jailed job sees, as a cache key: its script (named by its content, which holds
 * esbuild's JS and so the binary version it accepts), esbuild's binary and Node (by path,
 * size and mtime; Node's version), the jail's settings, the job's binds (the snapshot's by
 * where it is shown), files, environment and limits, the request, the folder's copy (by
 * content) and the SDK with its packages (every entry's stat, which any edit changes).
 */
function jobKey(job: HostJob, setup: HostJobSetup, request: object, snapshot: FolderSnapshot): string {
  const sdk = runtimeRoot();
  return bundleKey({
    script: basename(job.script ?? ""),
    esbuild: binaryKey(esbuildBinary()),
    node: `${process.version} ${binaryKey(process.execPath)}`,
    jail: setup.jail ?? {},
    binds: (job.binds ?? []).map((bind) => (bind.host === snapshot.dir ? { snapshotAt: bind.jail } : bind)),
    files: job.files,
    env: job.env,
    limits: { cpus: job.cpus, memoryBytes: job.memoryBytes },
    request,
    folder: snapshot.digest,
    sdk: treeStamp([sdk, ...sdkPackageDirs(sdk)]),
  });
}

/** A source the job says it read: a regular file of the snapshot reached by no link (the answer is the jail's word). */
function sourceFromSnapshot(snapshot: FolderSnapshot, path: string): SourceFile {
  const full = join(snapshot.dir, path);
  const fine =
    typeof path === "string" &&
    inside(snapshot.dir, full) &&
    full !== snapshot.dir &&
    realOrNull(full) === full &&
    lstatSync(full).isFile();
  if (!fine)
    throw new TetherError(
      BrokerCode.installFailed,
      `the bundling jail named a source that is not a file of the folder: ${JSON.stringify(path).slice(0, 200)}`,
    );
  const content = readFileSync(full);
  return { path, sha256: createHash("sha256").update(content).digest("hex"), content };
}

const realOrNull = (path: string): string | null => orNull(() => realpathSync(path));
