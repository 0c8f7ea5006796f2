import { outcome, text, type Tool } from "@tether/ext";

export const tools: Record<string, Tool> = {
  ticket_digest: () => outcome([text("No open tickets.")]),
};
