/**
 * flaky: written for a host that injects its configuration as a global before
 * loading extensions. Tether never does (extensions see no environment), so the
 * module throws while loading and the satellite fails to boot.
 */
import { json, outcome, type Tool } from "@tether/ext";

interface FeedConfig {
  readonly feedUrl: string;
}

const config = (globalThis as { FLAKY_CONFIG?: FeedConfig }).FLAKY_CONFIG;
if (config === undefined) throw new Error("missing configuration: FLAKY_CONFIG.feedUrl is not set");

export const tools: Record<string, Tool> = {
  feed_items: () => outcome([json({ feed: config.feedUrl, items: [] })]),
};
