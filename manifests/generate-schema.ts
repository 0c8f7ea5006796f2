/**
 * Generates `manifests/schema.json`, the published JSON Schema of
 * `manifest.toml`, from the valibot `Manifest` schema (the one definition).
 * Editors use it through taplo (`#:schema` comment); the broker itself
 * validates with `parseManifest`, never with this file.
 *
 * Regenerate after any change to `broker/install/manifest.ts`:
 *
 *     npx tsx manifests/generate-schema.ts
 *
 * `tests/unit/manifest-schema.test.ts` fails while the committed file is stale.
 */
import { realpathSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { toJsonSchema, type JsonSchema } from "@valibot/to-json-schema";
import { Manifest } from "../broker/install/manifest.js";

/** Where the published schema lives. */
export const SCHEMA_PATH = fileURLToPath(new URL("./schema.json", import.meta.url));

/** A URN, not a URL: the schema is published in the repository, not hosted. */
export const SCHEMA_ID = "urn:tether:schema:manifest";

/**
 * Hover text for every field, keyed by its path (`tool.name` is a field of each
 * `[[tool]]` row). valibot has no place for these in the manifest schema
 * itself, so they live here; generation fails when a field has none or when a
 * description names a field that no longer exists.
 */
const DESCRIPTIONS: Record<string, string> = {
  name: "The extension's name: a-z, 0-9, _ and -, at most 64 characters, starting with a letter. Unique per broker.",
  version: "The extension's version, semver (1.2.3, 1.2.3-beta.1, 1.2.3+build).",
  description: "One line for operators and the model, at most 4096 characters.",
  entry: "The entry module, a path relative to the extension folder ending in .ts, .js, .mts or .mjs.",
  requires: "Names of other extensions this one needs; it is inactive while any of them is.",
  priority:
    "Registry order after dependency order: lower first, then the name. Decides which extension the hook bus asks first and who keeps a colliding tool or command name.",
  tool: "Model-callable tools, one [[tool]] row each. The entry module must serve exactly these.",
  "tool.name":
    "The tool's name: letters, digits, _ . and -, at most 64, starting with a letter. Unique in the manifest.",
  "tool.description": "What the tool does, for the model; at most 4096 characters.",
  "tool.parameters":
    "A JSON Schema for the tool's arguments. The broker checks every call against it before it reaches the satellite; it must compile (ajv) or install fails.",
  "tool.deadline_ms":
    "This tool's deadline in milliseconds. It can only shorten [limits] deadline_ms, never extend it.",
  hook: "Hook-bus events this extension answers, one [[hook]] row each, at most one row per event.",
  "hook.event": "The lifecycle event to hook.",
  "hook.deadline_ms":
    "This hook's time limit in milliseconds (default 5000, never more than [limits] deadline_ms); past it the hook counts as failed.",
  "hook.on_error": "What a crash or timeout of this hook becomes: note (reported, the event proceeds) or block.",
  "hook.match":
    "tool_call, tool_result and cap_call only: ask this hook only about these subjects (anchored globs, * any run, ? one character, case-sensitive). Tool events: tool names (echo, fs_*). cap_call: capabilities (kv.put, kv.*), or a net capability, a space and a host (net.fetch *.example.com). Leave it out to hook every subject; at most 32.",
  command: "Commands (/name) this extension adds, one [[command]] row each.",
  "command.name": "The command's name: a-z, 0-9, _ and -, at most 64, starting with a letter.",
  "command.description": "What the command does; at most 4096 characters.",
  "command.arguments":
    "Its named arguments (an MCP prompt's), at most 16: the command's text is their values in this order, " +
    "separated by spaces.",
  "command.arguments.name": "The argument's name: letters, digits, _ and -, at most 64, starting with a letter.",
  "command.arguments.description": "What the argument is; at most 1024 characters.",
  "command.arguments.required": "Whether it must be given (default false).",
  "command.arguments.choices": "What completion offers for it (at most 100 values of 1 to 256 characters).",
  context:
    "Context loaders, one [[context]] row each: text for the model's context, loaded when a session activates the extension. A loader that fails or times out makes the extension inactive in that session, as a whole.",
  "context.name": "The loader's name (a-z, 0-9, _ and -): a key of the module's exported `contexts`.",
  "context.description": "What the text is, for the operator; at most 4096 characters.",
  "context.deadline_ms":
    "This loader's time limit in milliseconds (default 5000, never more than [limits] deadline_ms).",
  route:
    "Host routes, one [[route]] row each: named handlers the harness (not the model) calls with a request string. Route names are unique in a session; a later extension with a taken name is inactive.",
  "route.name": "The route's name (a-z, 0-9, _ and -): a key of the module's exported `routes`.",
  "route.description": "What the route answers; at most 4096 characters.",
  "route.deadline_ms": "This route's time limit in milliseconds (never more than [limits] deadline_ms).",
  "route.resource":
    "Also serve the route as an MCP resource (tether mcp, docs/mcp.md): reading it calls the route with the JSON text {uri, params} and answers what it returns. The operator sees it at review.",
  "route.resource.uri":
    "The resource's URI (test://static-text), or an RFC 6570 level-1 template (test://items/{id}) whose {name} segments a read fills and hands the route as params. At most 1024 characters and 16 variables; not the scheme tether:, not a URI another route of the manifest serves.",
  "route.resource.mime_type":
    "Its MIME type (default text/plain). A text type (text/*, application/json, *+json, application/xml, *+xml…) is served as the route's text; any other as binary, so the route must return base64.",
  compaction:
    "Compaction strategies, one [[compaction]] row each: they summarise a session's conversation and say which messages they folded. They see the whole conversation.",
  "compaction.name":
    "The strategy's name (a-z, 0-9, _ and -): a key of the module's exported `compactions`. Unique in a session.",
  "compaction.description": "How it compacts; at most 4096 characters.",
  "compaction.deadline_ms": "This strategy's time limit in milliseconds (never more than [limits] deadline_ms).",
  service:
    "HTTP routes, one [[service]] row each, that tether serve mounts under /ext/<extension>/ for the serve token's holders; the module's exported `services` answers each request from the daemon scope, only while the extension is enabled globally (docs/services.md).",
  "service.name": "The route's name (a-z, 0-9, _ and -): a key of the module's exported `services`.",
  "service.description": "What the route serves, for the operator; at most 4096 characters.",
  "service.methods": "The HTTP methods it takes (GET, HEAD, POST, PUT, PATCH, DELETE); another is answered 405.",
  "service.path": "Its path under /ext/<extension>: exact, or ending in /* for everything under it.",
  "service.max_body_bytes":
    "The request body bound in bytes (default 16384, ceiling 1048576); past it the request is answered 413 before the service sees it.",
  "service.rate_per_minute":
    "Requests a minute the route takes, from all clients together (default 60); past it 429 with Retry-After.",
  "service.deadline_ms":
    "A request's time limit in milliseconds (default 5000, never more than [limits] deadline_ms); past it 504.",
  search:
    "Search providers, one [[search]] row each: the module's exported `search` answers a query with results, for the sessions the extension is active in (docs/search.md). A session's search preference ranks and excludes them.",
  "search.name":
    "The provider's name (a-z, 0-9, _ and -): a key of the module's exported `search`. The first in registry order keeps a name two active extensions declare.",
  "search.description": "What it searches, for the operator, the harness and the routes; at most 4096 characters.",
  "search.deadline_ms": "One search's time limit in milliseconds (default 5000, never more than [limits] deadline_ms).",
  capabilities:
    "Capabilities it asks for beyond kv, skv, log, report and net.fetch (which [net] grants); each is granted by the approval.",
  "capabilities.search":
    "Ask the session's search providers (search.query from @tether/cap), judged and audited per call (default false).",
  model:
    "Model calls of its own: model.complete from @tether/cap, judged per call against this budget and routed by the session's provider preference (docs/providers.md#model-calls-from-extensions). Exclusive work: refused (busy_session) while a run of the session is active.",
  "model.providers":
    "Only these providers ([[provider]] names of other extensions); left out, any the broker serves. A provider more widens an upgrade.",
  "model.max_tokens_per_call":
    "The most max_tokens one call may ask for (1 to 10000000000); a raise widens an upgrade.",
  "model.max_tokens_per_day":
    "Input and output tokens its calls may use in one UTC day on this broker, as the providers report them; at least max_tokens_per_call. A raise widens an upgrade.",
  act: "Acts of its own it may report to the session's hooks (ctx.act), one [[act]] row each, at most 64, no name twice: tool_call hooks may block them or rewrite their arguments, tool_result hooks may withhold their output.",
  "act.name":
    "The act's name: lowercase words of a-z, 0-9, _ and -, joined by dots (mail.submit), at most 64. [[hook]] match globs select it (mail.*).",
  "act.description": "What the act does, for the operator at review; 1 to 4096 characters.",
  "act.parameters":
    "A JSON Schema (draft-07) the arguments it reports and every hook's rewrite must fit; it must compile (ajv) or install fails. None: any JSON.",
  provider:
    "Model providers, one [[provider]] row each: catalog data (models, context windows, prices) served to harnesses, and completions the module's exported `providers` answer through net.fetch. Served from the daemon scope, only while the extension is enabled globally. A later extension with a taken provider name serves no provider.",
  "provider.name":
    "The provider's name (a-z, 0-9, _ and -): a key of the module's exported `providers`. Unique among the globally enabled extensions.",
  "provider.description": "What the provider is, for the operator and the harness; at most 4096 characters.",
  "provider.base_url":
    "Where the provider's API is (http or https); handed to each completion. A [net] allow rule must still allow it.",
  "provider.secret":
    "The name of a secret the broker injects into the provider's requests; handed to each completion, which passes it to net.fetch as { secret }.",
  "provider.models": "The models it offers, at least one: what harnesses see in the catalog.",
  "provider.models.id":
    "The model's id as the provider's API names it (letters, digits, . _ : / @ -). Unique in the provider.",
  "provider.models.context_window": "Tokens the model takes in one request (input and output).",
  "provider.models.input_price_per_mtok": "US dollars per million input tokens (default 0).",
  "provider.models.output_price_per_mtok": "US dollars per million output tokens (default 0).",
  "provider.models.capabilities": "Words for what the model can do (chat, tools, vision, json…), at most 32.",
  "provider.deadline_ms": "A completion's time limit in milliseconds (default and ceiling: [limits] deadline_ms).",
  managed:
    "Managed preparation: the module exports `managed` with `prepare` (asked at each session's activation, with the session id and workspace path) and optionally `close`. A failed preparation makes the extension inactive in that session as a whole.",
  "managed.prepare_deadline_ms":
    "The preparation's time limit in milliseconds (default 5000, never more than [limits] deadline_ms).",
  "managed.close_deadline_ms":
    "The close's time limit in milliseconds (default 5000, never more than [limits] deadline_ms).",
  observe: "Observer: the module exports `observe`, told the session's events in ordered batches without a verdict.",
  "observe.events":
    "Which events it is told about: turn (a turn settled), usage (a model request's tokens and cost), compaction (a compaction and its folds), session (extensions activated or deactivated).",
  login:
    "OAuth sign-ins the broker runs for this extension, one [[login]] row each (docs/login.md): the operator signs in with tether login; the tokens stay with the broker and fill the [[secret]] the row names. The jail never sees them.",
  "login.name": "The login's name (a-z, 0-9, _ and -): tether login <extension> <name>. Unique in the manifest.",
  "login.description": "What signing in gives the extension, for the operator; at most 4096 characters.",
  "login.flow":
    "device (RFC 8628: the operator enters a code on another device) or authorization_code (PKCE, with a redirect to a loopback listener of the broker).",
  "login.client_id": "The client id the authorization server issued (a public client: no client secret).",
  "login.authorization_endpoint":
    "authorization_code only: where the operator's browser signs in. https://, or http:// to a loopback address (tests).",
  "login.device_authorization_endpoint":
    "device only: where the broker asks for a device code and a user code. https://, or http:// to a loopback address (tests).",
  "login.token_endpoint":
    "Where the broker exchanges a code and refreshes tokens. https://, or http:// to a loopback address (tests).",
  "login.revocation_endpoint": "Optional (RFC 7009): tether logout asks it to revoke the tokens before deleting them.",
  "login.cross_origin":
    "Default false: every endpoint must be on one origin (the token endpoint receives the operator's authorization code and PKCE verifier). true says they are not on purpose; review tells the operator which origins.",
  "login.scopes": "The scopes to ask for (at most 64); empty: the server's default.",
  "login.secret":
    "The [[secret]] the access token fills: the broker injects it into the extension's requests; the extension never reads it.",
  net: "Network egress this extension requests. The operator approves it (and may narrow it).",
  "net.allow": "Egress rules, stored verbatim and shown to the operator at review. Empty: no network.",
  secret:
    "Secrets the broker holds and injects into requests, one [[secret]] row each: the extension names one in net.fetch and never sees its value. The operator sets it with tether secret set.",
  "secret.name": "The secret's name (a-z, 0-9, _ and -): what net.fetch's secret option and tether secret set name.",
  "secret.description": "What the secret is and which access it needs, for the operator; at most 4096 characters.",
  "secret.rules":
    "The [net] allow rules (their exact text) whose requests may carry it; any other request naming it is refused, and a redirect to another rule's URL is sent without it.",
  "secret.header":
    "The header the broker sends it in (e.g. Authorization). Exactly one of header and query; hop-by-hop, Host, Content-Length, proxy and override headers are refused.",
  "secret.query": "The query parameter the broker sends it in (e.g. api_key). Exactly one of header and query.",
  "secret.format": 'How the value is written, {} standing for it exactly once (default "{}"; e.g. "Bearer {}").',
  init: "An initializer: the module exports `init`, which the broker runs once per approved version (after `tether approve`, or before the extension's first invocation when a broker finds that version not yet initialized). A failed init leaves the extension inactive until it succeeds at a later broker start (docs/storage.md).",
  "init.deadline_ms":
    "The initializer's time limit in milliseconds (default 10000, never more than [limits] deadline_ms).",
  storage:
    "The extension's own SQLite database (<home>/data/<name>.sqlite), reached through db.query and db.exec (docs/storage.md).",
  "storage.max_bytes":
    "The database's size quota in bytes (65536 to 1073741824, default 10485760): SQLite refuses to grow past it.",
  limits: "Resource limits of the extension's satellite.",
  "limits.memory_mb": "V8 old-space limit of the satellite in MiB (16 to 8192).",
  "limits.deadline_ms": "Deadline of one invocation in milliseconds (1 to 3600000); past it the satellite is killed.",
  "limits.idle_s": "Seconds an idle satellite is kept before it is reaped (0 to 86400).",
  "limits.kv_bytes": "Bytes of durable key-value storage the extension may use (0 or more).",
  "limits.fetches":
    "net.fetch requests one invocation may have in flight at once, 1-64; more wait their turn until the deadline.",
  "limits.concurrency":
    "Invocations one session may have open in this extension at once, 1-16 (default 1: one at a time); calls " +
    "beyond it wait their turn. They share one satellite process (its module state) unless satellites spreads them.",
  "limits.satellites":
    "Processes a session's open invocations are spread over, 1-16 (default 1, at most concurrency): for " +
    "CPU-bound tools. The operator's [satellites] max_concurrency and max_pool_memory_mb bound it.",
};

/** The manifest's JSON Schema (draft-07), with `$id`, title and field descriptions. */
export function manifestJsonSchema(): JsonSchema {
  // "throw": a valibot construct with no JSON Schema equivalent must fail here,
  // not silently publish a schema looser than the manifest.
  const generated = toJsonSchema(Manifest, { errorMode: "throw" });
  const { $schema, ...body } = generated;
  const unused = new Set(Object.keys(DESCRIPTIONS));
  const described = describe(body, "", unused);
  if (unused.size > 0) {
    throw new Error(
      `manifests/generate-schema.ts: descriptions for fields the manifest no longer has: ${[...unused].join(", ")}`,
    );
  }
  return {
    $schema,
    $id: SCHEMA_ID,
    title: "Tether extension manifest (manifest.toml)",
    description:
      "The manifest.toml of a Tether extension. Generated from broker/install/manifest.ts by manifests/generate-schema.ts; the reference is docs/manifest.md.",
    ...described,
  };
}

/** Copies `schema`, adding the description of each property found under `path`. */
function describe(schema: JsonSchema, path: string, unused: Set<string>): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (schema.properties !== undefined) {
    const properties: Record<string, JsonSchema> = {};
    for (const [key, value] of Object.entries(schema.properties)) {
      const field = path === "" ? key : `${path}.${key}`;
      if (typeof value === "boolean")
        throw new Error(`manifests/generate-schema.ts: ${field}: unexpected boolean schema`);
      const text = DESCRIPTIONS[field];
      if (text === undefined) {
        throw new Error(
          `manifests/generate-schema.ts: the manifest field '${field}' has no description; add one to DESCRIPTIONS`,
        );
      }
      unused.delete(field);
      properties[key] = { description: text, ...describe(value, field, unused) };
    }
    out.properties = properties;
  }
  // Rows of [[tool]], [[hook]], [[command]]: their fields are `tool.name` etc.
  if (schema.items !== undefined && typeof schema.items === "object" && !Array.isArray(schema.items)) {
    out.items = describe(schema.items, path, unused);
  }
  // A row with variants ([[hook]], by event): each variant's fields share the row's paths.
  if (schema.oneOf !== undefined) {
    out.oneOf = schema.oneOf.map((option) => {
      if (typeof option === "boolean")
        throw new Error(`manifests/generate-schema.ts: ${path}: unexpected boolean schema`);
      return describe(option, path, unused);
    });
  }
  return out;
}

/** The published file's exact text: pretty JSON and a trailing newline. */
export function manifestJsonSchemaText(): string {
  return `${JSON.stringify(manifestJsonSchema(), null, 2)}\n`;
}

function isMain(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  writeFileSync(SCHEMA_PATH, manifestJsonSchemaText());
  console.log(`wrote ${SCHEMA_PATH}`);
}
