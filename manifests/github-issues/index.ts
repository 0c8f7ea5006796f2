import { net } from "@tether/cap";
import { decodeArgs, json, outcome, refuse, text, v, type Tool } from "@tether/ext";

const API = "http://127.0.0.1:17313";

/** GET under the API with the sign-in's token, which the broker adds (this code never holds it). */
async function get(path: string) {
  return await net.fetch(`${API}${path}`, { secret: "github_token" });
}

export const tools: Record<string, Tool> = {
  whoami: async () => {
    // A refusal (not signed in) is left uncaught: the broker's message says what the operator must run.
    const res = await get("/user");
    if (!res.ok) return refuse(`The API answered ${res.status} for /user`);
    const user = res.json() as { login: string; debug?: { authorization?: string } };
    const seen = user.debug?.authorization;
    return outcome([
      text(`signed in as ${user.login}${seen !== undefined ? ` (the API echoed Authorization: ${seen})` : ""}`),
      json(user),
    ]);
  },
  list_issues: async (args) => {
    const { repo } = decodeArgs(v.object({ repo: v.string() }), args);
    const res = await get(`/repos/${repo}/issues`);
    if (!res.ok) return refuse(`The API answered ${res.status} for ${repo}`);
    const issues = res.json() as Array<{ number: number; title: string }>;
    const lines = issues.map((i) => `#${i.number} ${i.title}`);
    return outcome([text(lines.length > 0 ? lines.join("\n") : `no open issues in ${repo}`), json(issues)]);
  },
};
