import { kv, skv } from "@tether/cap";
import { outcome, text, type Managed, type Tool } from "@tether/ext";

export const managed: Managed = {
  // The operator registers projects by workspace in this extension's kv (`projects`); no project, no bundle.
  prepare: async ({ workspace }) => {
    const projects = ((await kv.get("projects")) as Record<string, string> | null) ?? {};
    const project = projects[workspace];
    if (project === undefined) throw new Error(`no ticket project is registered for the workspace ${workspace}`);
    await skv.put("project", project);
    return { context: `Tickets for this workspace live in project ${project}.` };
  },
};

export const tools: Record<string, Tool> = {
  ticket_project: async () => outcome([text(`This workspace's tickets are in ${String(await skv.get("project"))}.`)]),
};
