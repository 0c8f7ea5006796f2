/**
 * The live sessions the console shows: the serve server's own (the sessions
 * its clients opened), each with its extensions' states, and the two things
 * the page may do to one — reload it (`session.reload`) or close it
 * (`session.close`), as a client would over the API.
 */
import type { ReloadReport } from "../sessions/active-set.js";
import type { SessionExtensionStatus } from "../sessions/session.js";

export interface LiveSession {
  readonly id: string;
  readonly workspace: string;
  readonly extensions: readonly SessionExtensionStatus[];
}

export interface LiveSessions {
  /** The sessions open now (those still opening are left out). */
  list(): Promise<LiveSession[]>;
  /** Reloads one: its extensions' activation is worked out again. */
  reload(id: string): Promise<ReloadReport>;
  /** Closes one, as `session.close` does; the notes of its close. */
  close(id: string): Promise<string[]>;
}
