/**
 * The loopback ports `make demo`'s example services listen on: the ports the
 * example manifests name (manifests/weather, github-issues, openai-compatible),
 * so the rules an operator approves reach them. Fixed, since a manifest's rules
 * are approved as written.
 */
export const DEMO_PORTS = {
  /** The weather service (manifests/weather's `[net] allow`). */
  weather: 17311,
  /** The OAuth server (manifests/github-issues's `[[login]]` endpoints). */
  oauth: 17312,
  /** The GitHub-style API (manifests/github-issues's `[net] allow` and secret rule). */
  githubApi: 17313,
  /** The OpenAI-compatible provider (manifests/openai-compatible's `base_url` and `[net] allow`). */
  openAi: 17320,
} as const;
