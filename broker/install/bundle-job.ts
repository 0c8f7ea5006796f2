/**
 * The bundling job, run by Node inside the bundling jail (bundle.ts): reads
 * one request on stdin, bundles, and writes one JSON answer on stdout — the
 * artifact's code and the paths of the folder's files it was built from (the
 * broker reads their contents from its own snapshot, not from this answer).
 */
import { bundleFolder, type FolderProblems } from "./bundle-core.js";
import type { Manifest } from "./manifest.js";

interface BundleRequest {
  readonly root: string;
  readonly sdk: string;
  readonly manifest: Manifest;
  readonly problems: FolderProblems;
}

export type BundleAnswer =
  | { readonly ok: true; readonly code: string; readonly sources: readonly string[] }
  | { readonly ok: false; readonly code: string; readonly message: string };

const chunks: Buffer[] = [];
process.stdin.on("data", (chunk: Buffer) => chunks.push(chunk));
process.stdin.on("end", () => {
  const request = JSON.parse(Buffer.concat(chunks).toString("utf8")) as BundleRequest;
  const answer = (a: BundleAnswer) => process.stdout.write(JSON.stringify(a), () => process.exit(0));
  bundleFolder(request.root, request.sdk, request.manifest, request.problems).then(
    (artifact) => answer({ ok: true, code: artifact.code, sources: artifact.sources.map((s) => s.path) }),
    (err: Error & { code?: unknown }) =>
      answer({ ok: false, code: typeof err.code === "string" ? err.code : "install_failed", message: err.message }),
  );
});
