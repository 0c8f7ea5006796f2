/**
 * The audit form's times: a UTC date and time (`2026-12-01T10:00`), or a
 * duration back from now (`2h`), as `tether audit --since` takes them — but a
 * date and time without an offset is read as UTC, as the form says, not as
 * the server's local time (which is how `Date.parse` reads it).
 */
import { parseSince } from "../operator/audit.js";

const NO_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?$/;

export function parseUtcSince(text: string, now = Date.now()): number {
  return parseSince(NO_OFFSET.test(text.trim()) ? `${text.trim()}Z` : text, now);
}
