/**
 * What a feature is handed when it registers with the kernel: the scopes, the
 * approvals in force and their changes, the repositories, a logger, and the
 * two ways to take part — an interceptor around every invocation and a close
 * hook. Features (initializers, sign-ins, providers, services, sessions, the
 * fleet) import this interface, never the class that implements it.
 */
import type { Logger } from "../base/log.js";
import type { Approval, Installed, Registry } from "../registry/registry.js";
import type { Ledger } from "../store/ledger.js";
import type { Store } from "../store/open.js";
import type { ApprovalChanges } from "./approval-changes.js";
import type { Interceptor } from "./interceptor.js";
import type { SessionScope } from "./session-scope.js";

/**
 * Run when the kernel closes, in reverse order of registration (the last
 * registered first, as avvio's close queue). `abort`: destroyed, not closed;
 * `again`: a destroy after a close already ran the hooks once.
 */
export type CloseHook = (how: { readonly abort: boolean; readonly again: boolean }) => Promise<void> | void;

export interface KernelHost {
  readonly home: string;
  readonly store: Store;
  readonly registry: Registry;
  readonly ledger: Ledger;
  readonly log: Logger;
  /** The approvals in force, with an event after every change. */
  readonly approvals: ApprovalChanges;
  /** Whether the kernel was closed or destroyed. */
  readonly closed: boolean;
  /** The object for session `id` (made on first use). */
  scope(id: string): SessionScope;
  /** The approval that lets `name` run now, or an error that names the command that fixes it. */
  approved(name: string): { installed: Installed; approval: Approval };
  /** Puts `interceptor` around every invocation from now on; returns its removal. */
  intercept(interceptor: Interceptor): () => void;
  /** Runs `hook` when the kernel closes, after the satellites stopped. */
  onClose(hook: CloseHook): void;
}
