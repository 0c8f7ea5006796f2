/**
 * What a `Session` needs of the broker it opens on: the kernel, the tool
 * argument checker (a rewrite by a hook is checked as the caller's arguments
 * were), the providers' view and completions, and the fleet it leases from.
 */
import type { ToolArgsChecker } from "../base/tool-args.js";
import type { SessionFleet } from "../broker-options.js";
import type { KernelHost } from "../kernel/host.js";
import type { CompletionOptions, CompletionReport } from "../providers/completion.js";
import type { ProvidersView } from "../providers/view.js";

export interface SessionHost extends KernelHost {
  readonly toolArgs: ToolArgsChecker;
  /** The fleet this broker is a host of, or null: a session is leased from it. */
  readonly fleet: SessionFleet | null;
  providers(session?: string): ProvidersView;
  complete(request: unknown, options?: CompletionOptions): Promise<CompletionReport>;
}
