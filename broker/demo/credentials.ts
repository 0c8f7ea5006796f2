/**
 * `make demo`'s credentials part: a sign-in the broker runs (the device flow,
 * against the OAuth server of examples/servers/), its token injected into the
 * github-issues extension's request and redacted from what comes back; then the
 * model providers' catalog and a streamed completion from a fake
 * OpenAI-compatible server. The servers listen on the loopback ports the
 * example manifests name (./ports.ts).
 */
import { join } from "node:path";
import type { Broker } from "../broker.js";
import type { InvocationOutcome } from "../base/outcome.js";
import { loginsOf } from "../login/logins.js";
import { startGithubApi, type GithubApi } from "../../examples/servers/github-api.js";
import { fakeOpenAi, type FakeProvider } from "../../examples/servers/fake-providers.js";
import { startOAuthServer, type OAuthServer } from "../../examples/servers/oauth-server.js";
import { DEMO_PORTS } from "./ports.js";

const SESSION = "credentials";

function said(outcome: InvocationOutcome<"tool">): string {
  if (!outcome.ok) return `error ${outcome.error.code}: ${outcome.error.msg}`;
  return outcome.value.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join(" | ");
}

/** Starts each server on its fixed port; a port in use is named. */
async function listen<T>(what: string, port: number, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    throw new Error(`cannot start the demo ${what} on 127.0.0.1:${port}: ${(err as Error).message}`);
  }
}

export async function credentialsDemo(broker: Broker, repo: string, step: (title: string) => void): Promise<void> {
  let oauth: OAuthServer | null = null;
  let api: GithubApi | null = null;
  let provider: FakeProvider | null = null;
  try {
    oauth = await listen("OAuth server", DEMO_PORTS.oauth, () => startOAuthServer(DEMO_PORTS.oauth));
    // The device flow polls every `interval` seconds: one, so the demo waits a second, not five.
    oauth.knobs.interval = 1;
    const issuer = oauth;
    api = await listen("GitHub-style API", DEMO_PORTS.githubApi, () => startGithubApi(issuer, DEMO_PORTS.githubApi));
    const script = {
      deltas: ["The ", "token ", "stayed ", "with ", "the ", "broker", "."],
      inputTokens: 9,
      outputTokens: 7,
    };
    provider = await listen("OpenAI-compatible provider", DEMO_PORTS.openAi, () =>
      fakeOpenAi(script, DEMO_PORTS.openAi),
    );

    step("Credentials: the broker signs in; the token fills the extension's requests and never enters the jail");
    for (const name of ["github-issues", "openai-compatible"]) {
      await broker.registry.install(join(repo, "manifests", name));
      broker.registry.approve(name, { by: "demo" });
      console.log(`  installed and approved ${name}`);
    }
    const call = async (tool: string, args = "{}") =>
      said(await broker.callTool("github-issues", tool, args, { session: SESSION }));
    console.log(`  whoami, not signed in → ${await call("whoami")}`);

    // What `tether login github-issues` runs; the demo's OAuth server approves the code on the first poll.
    const started = await loginsOf(broker).start("github-issues");
    console.log(
      `  tether login github-issues → open ${started.prompt.verificationUri} ` +
        `and enter ${started.prompt.userCode ?? "(no code)"}`,
    );
    await started.done;
    const [status] = loginsOf(broker).status("github-issues");
    console.log(
      `  signed in: ` +
        (status?.signed_in === true
          ? `yes, expires in ${status.expires_in} s, refreshable: ${status.refreshable ? "yes" : "no"}`
          : "no"),
    );
    console.log(`  whoami → ${await call("whoami")}`);
    const issued = oauth.issued.filter((v) => v.startsWith("at-")).at(-1);
    const carried = api.hits.at(-1)?.authorization === `Bearer ${issued}`;
    console.log(
      `  the API received Authorization: Bearer <the access token the OAuth ` +
        `server issued>: ${carried ? "yes" : "NO"}; the jail got [secret] back`,
    );
    console.log(`  list_issues acme/app → ${(await call("list_issues", '{"repo":"acme/app"}')).replace(/\n/g, "; ")}`);
    const [out] = await loginsOf(broker).logout("github-issues");
    console.log(
      `  tether logout github-issues → tokens revoked at the server (${oauth.revoked.length}) ` +
        `and ${out?.deleted === true ? "deleted" : "not found"}; whoami → ${await call("whoami")}`,
    );

    step("Model providers: the catalog, and a completion streamed through the provider's satellite");
    for (const entry of broker.providers().providers) {
      console.log(
        `  ${entry.name} (${entry.extension}) at ${entry.base_url}: ${entry.models.map((m) => m.id).join(", ")}`,
      );
    }
    process.stdout.write("  partials:");
    const report = await broker.complete(
      {
        provider: "local-openai",
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Where is the token?" }],
        max_tokens: 64,
      },
      { onPartial: (text) => process.stdout.write(` ${JSON.stringify(text)}`) },
    );
    process.stdout.write("\n");
    const { outcome } = report;
    console.log(
      outcome.ok
        ? `  → "${outcome.text}" (${outcome.usage.input_tokens} tokens ` +
            `in, ${outcome.usage.output_tokens} out, stop: ${outcome.stopReason})`
        : `  → error ${outcome.error.code}: ${outcome.error.msg}`,
    );
  } finally {
    await Promise.all([provider?.close(), api?.close(), oauth?.close()]);
  }
}
