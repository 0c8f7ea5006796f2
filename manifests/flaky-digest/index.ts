/** flaky-digest: fine by itself; inactive whenever flaky (which it requires) is. */
import { outcome, text, type Tool } from "@tether/ext";

export const tools: Record<string, Tool> = {
  feed_digest: () => outcome([text("nothing new in the feed today")]),
};
