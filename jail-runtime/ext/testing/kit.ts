/**
 * `testKit()`: runs an extension's tools, hooks, commands and the other kinds
 * (its initializer, its services, …) the way a satellite does — one
 * invocation at a time, under a token, with a deadline — against in-memory
 * capabilities (`kv`, `net`, `db`), with no socket and no broker.
 */
import { begin, castCap, end, within } from "../../cap/invocation.js";
import { act, actBefore } from "../../cap/act.js";
import { answer, type Answer, type Served } from "../answer.js";
import type { Ctx } from "../ctx.js";
import type { AnyHook, Declared, EventPayload, HookEvent } from "../hook.js";
import type { SessionServed } from "../session.js";
import type { Command, Tool } from "../tool.js";
import type { SessionKind, SessionPayload } from "../../wire/session-kinds.js";
import { FakeDb, type FakeDbOptions } from "./db.js";
import { FakeKv } from "./kv.js";
import { readManifest, manifestBesideTest } from "./manifest.js";
import { FakeNet, type FakeNetOptions, type Routes } from "./net.js";
import { FakeSearch, type FakeSearchOptions } from "./search.js";
import { FakeActs, type FakeActsOptions } from "./acts.js";
import { FakeModel, type FakeModelOptions } from "./model.js";
import { asDelivered, crashed } from "./outcome.js";
import { StandIn, type LogLine } from "./stand-in.js";

/** An extension's module, as its entry exports it: `import * as extension from "./index.ts"`. */
export interface Extension extends SessionServed {
  readonly tools?: Readonly<Record<string, Tool>>;
  readonly hooks?: Readonly<Record<string, AnyHook>>;
  readonly commands?: Readonly<Record<string, Command>>;
}

export interface KitOptions {
  /**
   * Its manifest.toml (a path, or `new URL("./manifest.toml", import.meta.url)`): `net.fetch` is
   * judged against its `[net] allow` rules by the broker's own matcher, and its `name` names the
   * extension. Default: the manifest.toml beside the test module, when there is one and
   * `deno test --allow-read` lets the kit read it. `false`: none (routes alone decide).
   */
  readonly manifest?: string | URL | false;
  /**
   * The approved `[net] allow` rules, in place of the manifest's (an approval narrowed with
   * `tether approve --only`, say); `[]` approves none.
   */
  readonly allow?: readonly string[];
  /** The extension's name, as refusals name it (default the manifest's `name`, else "extension"). */
  readonly name?: string;
  /** Its `kv`: a `FakeKv`, or the entries to start with. */
  readonly kv?: FakeKv | Readonly<Record<string, unknown>>;
  /**
   * Its `net`: a `FakeNet` (judged by the rules it was made with), or the routes to answer (judged
   * first by `allow` or the manifest's rules).
   */
  readonly net?: FakeNet | Routes;
  /**
   * Its `db` (`[storage]`): a `FakeDb`, or the options of a new one (its migrations folder, its
   * quota); default an empty one.
   */
  readonly db?: FakeDb | FakeDbOptions;
  /** Its `search` (`search.query`): a `FakeSearch`, or the scripted providers and whether it is declared. */
  readonly search?: FakeSearch | FakeSearchOptions;
  /** Its reported acts (`ctx.act`): a `FakeActs`, or what the session's hooks answer about them. */
  readonly acts?: FakeActs | FakeActsOptions;
  /** Its `model.complete`: a `FakeModel`, or its script and `[model]` budget. */
  readonly model?: FakeModel | FakeModelOptions;
  /** Its version (the manifest's `version`), as `init` is handed it; default "1.0.0". */
  readonly version?: string;
  /** The deadline of each invocation (the manifest's `[limits] deadline_ms`); default 30000. */
  readonly deadlineMs?: number;
}

export interface CallOptions {
  readonly deadlineMs?: number;
  readonly strand?: string;
}

export interface TestKit {
  readonly kv: FakeKv;
  readonly net: FakeNet;
  /** Its database: `db.query` and `db.exec` reach it (made at first use). */
  readonly db: FakeDb;
  /** Its `search.query`: the scripted providers, and every query served (`queries`). */
  readonly search: FakeSearch;
  /** Its reported acts: what the hooks were asked and answered (`acts`). */
  readonly acts: FakeActs;
  /** Its `model.complete`: the script, and every request served (`requests`). */
  readonly model: FakeModel;
  /** `log.write` lines, in order. */
  readonly logs: readonly LogLine[];
  /** Partials (`ctx.report`, `report.emit`), in order. */
  readonly reports: readonly string[];
  /** Calls a tool with arguments (sent as JSON, as the broker sends them). */
  tool(name: string, args?: unknown, options?: CallOptions): Promise<Answer>;
  /** Asks the hook for `event` with a payload; an `ok` answer's value is the verdict. */
  hook<E extends HookEvent>(event: E, payload: EventPayload<E>, options?: CallOptions): Promise<Answer>;
  /** Runs a command with its argument text (`/name args`). */
  command(name: string, args?: string, options?: CallOptions): Promise<Answer>;
  /** Runs a context loader; an `ok` answer's value is `{ text }`. */
  context(name: string, session?: Partial<SessionPayload<"context">>, options?: CallOptions): Promise<Answer>;
  /** Prepares a session (`[managed]`); an `ok` answer's value is the preparation (`{ context?, tools?, … }`). */
  prepare(session?: Partial<SessionPayload<"prepare">>, options?: CallOptions): Promise<Answer>;
  /** Closes a session (`[managed]`). */
  close(reason?: SessionPayload<"close">["reason"], options?: CallOptions): Promise<Answer>;
  /** Tells the observer a batch of events (`seq` and `at_ms` filled in when left out). */
  observe(
    events: ReadonlyArray<{
      kind: SessionPayload<"observe">["events"][number]["kind"];
      data?: Record<string, unknown>;
    }>,
    options?: CallOptions,
  ): Promise<Answer>;
  /** Calls a host route with a request string; an `ok` answer's value is `{ response }`. */
  route(name: string, request: string, options?: CallOptions): Promise<Answer>;
  /** Asks one of its own search providers (`[[search]]`); an `ok` answer's value is `{ results }`. */
  searchProvider(name: string, query: string, options?: { limit?: number }, call?: CallOptions): Promise<Answer>;
  /** Runs a compaction strategy; an `ok` answer's value is `{ summary, folds }`. */
  compact(
    name: string,
    input: Pick<SessionPayload<"compact">, "messages"> & Partial<SessionPayload<"compact">>,
    options?: CallOptions,
  ): Promise<Answer>;
  /**
   * Asks a provider for a completion (`base_url` "" and no secret unless given); an `ok` answer's
   * value is `{ text, usage, … }`, each delta in `reports`.
   */
  complete(
    provider: string,
    request: Pick<SessionPayload<"complete">, "model" | "messages"> & Partial<SessionPayload<"complete">>,
    options?: CallOptions,
  ): Promise<Answer>;
  /**
   * Runs the initializer (`[init]`; `version` the kit's, `reason` "approved" unless given); an `ok`
   * answer's value is `{ message? }`.
   */
  init(payload?: Partial<SessionPayload<"init">>, options?: CallOptions): Promise<Answer>;
  /**
   * Sends a `[[service]]` route one HTTP request (GET / with no query,
   * headers or body unless given; a `Uint8Array` body travels as base64);
   * an `ok` answer's value is the response `{ status, headers, body, body_encoding }`.
   */
  service(name: string, request?: ServiceRequestInput, options?: CallOptions): Promise<Answer>;
}

/** What `kit.service` builds a request from: any of its parts. */
export interface ServiceRequestInput {
  readonly method?: string;
  readonly path?: string;
  readonly query?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** The `service` payload for a request to route `route`, as the broker builds it (header names lowercase). */
function servicePayload(route: string, r: ServiceRequestInput): SessionPayload<"service"> {
  const headers = Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, x]) => [k.toLowerCase(), x]));
  const bytes = r.body instanceof Uint8Array;
  return {
    route,
    method: (r.method ?? "GET").toUpperCase(),
    path: r.path ?? "/",
    query: (r.query ?? "").replace(/^\?/, ""),
    headers,
    body: bytes ? base64(r.body as Uint8Array) : ((r.body as string | undefined) ?? ""),
    body_encoding: bytes ? "base64" : "text",
  };
}

/** The session the kit's session-facing calls are made in. */
const SESSION = { session_id: "test-session", workspace: "/workspace" };

/** How long past its deadline an invocation may still answer before the broker answers `timeout`. */
const GRACE_MS = 500;
let nextId = 1;

/**
 * A kit for one extension: `kv`, `net`, `log` and `report` are fakes that
 * answer as the broker does (codes, `(rule: …)` wording, quota, rates), and
 * each call answers what the harness would get. It takes the channel's place
 * for the whole process: use one kit at a time.
 *
 * @example
 * ```ts
 * import { outcome, text, type Tool } from "@tether/ext";
 * import { testKit } from "@tether/ext/testing";
 * const tools: Record<string, Tool> = { hello: () => outcome([text("hi")]) };
 * const kit = testKit({ tools });
 * const reply = await kit.tool("hello");
 * // { ok: true, value: { content: [{ type: "text", text: "hi" }], terminate: false } }
 * ```
 */
export function testKit(extension: Extension, options: KitOptions = {}): TestKit {
  const manifest =
    options.manifest === undefined
      ? manifestBesideTest()
      : options.manifest === false
        ? null
        : readManifest(options.manifest);
  const read = manifest !== null && "allow" in manifest ? manifest : null;
  const name = options.name ?? read?.name ?? "extension";
  const kv = options.kv instanceof FakeKv ? options.kv : new FakeKv(options.kv ?? {});
  const allow = options.allow ?? read?.allow;
  const judged: FakeNetOptions =
    allow !== undefined
      ? { allow, source: options.allow !== undefined ? "testKit's allow" : `${read!.source}: [net] allow` }
      : manifest !== null && "unread" in manifest
        ? { unjudged: manifest.unread }
        : {};
  const net = options.net instanceof FakeNet ? options.net : new FakeNet(options.net ?? {}, name, judged);
  let db: FakeDb | null = options.db instanceof FakeDb ? options.db : null;
  const dbOf = (): FakeDb => (db ??= new FakeDb(options.db instanceof FakeDb ? {} : (options.db ?? {})));
  const search =
    options.search instanceof FakeSearch ? options.search : new FakeSearch({ name, ...(options.search ?? {}) });
  const model = options.model instanceof FakeModel ? options.model : new FakeModel(options.model ?? {});
  const acts = options.acts instanceof FakeActs ? options.acts : new FakeActs({ name, ...(options.acts ?? {}) });
  const standIn = new StandIn(kv, net, dbOf, search, model, acts);
  let observed = 0;
  const hooks = extension.hooks ?? {};
  const served: Served = {
    contexts: extension.contexts,
    routes: extension.routes,
    compactions: extension.compactions,
    managed: extension.managed,
    observe: extension.observe,
    providers: extension.providers,
    services: extension.services,
    init: extension.init,
    search: extension.search,
    tools: extension.tools ?? {},
    commands: extension.commands ?? {},
    // As the generated entry pairs them: each hook under the event it is exported as.
    hooks: Object.keys(hooks).map((event): Declared => [event, hooks[event]!]),
  };

  async function invoke(
    kind: "tool" | "command" | "event" | SessionKind,
    what: string,
    args: string,
    call: CallOptions = {},
  ): Promise<Answer> {
    const id = nextId++;
    const token = `kit-${id}-${Math.random().toString(36).slice(2)}`;
    const deadlineMs = call.deadlineMs ?? options.deadlineMs ?? 30_000;
    standIn.attach();
    standIn.open(token);
    const controller = begin(id, token);
    const ctx: Ctx = {
      strand: call.strand ?? "",
      deadlineMs,
      signal: controller.signal,
      report: (text: string) => castCap("report.emit", { text: String(text) }),
      act,
      actBefore,
    };
    const timers: ReturnType<typeof setTimeout>[] = [];
    const late = new Promise<Answer>((resolve) => {
      timers.push(setTimeout(() => controller.abort(new Error("Deadline passed")), deadlineMs));
      const msg = `'${what}' did not answer within its ${deadlineMs} ms deadline; the satellite was stopped`;
      timers.push(setTimeout(() => resolve({ ok: false, error: { code: "timeout", msg } }), deadlineMs + GRACE_MS));
    });
    const run = async (): Promise<Answer> => {
      try {
        return await within(id, () => answer(served, { kind, name: what, args, strand: ctx.strand, deadlineMs }, ctx));
      } catch (err) {
        return crashed(err);
      }
    };
    try {
      return asDelivered(kind, what, await Promise.race([run(), late]));
    } finally {
      for (const timer of timers) clearTimeout(timer);
      end(id);
      standIn.close();
    }
  }

  return {
    kv,
    net,
    get db() {
      return dbOf();
    },
    search,
    acts,
    model,
    logs: standIn.logs,
    reports: standIn.reports,
    tool: (tool, args = {}, call) => invoke("tool", tool, JSON.stringify(args), call),
    hook: (event, payload, call) => invoke("event", event, JSON.stringify(payload), call),
    command: (command, args = "", call) => invoke("command", command, args, call),
    context: (loader, session = {}, call) =>
      invoke("context", loader, JSON.stringify({ ...SESSION, ...session }), call),
    prepare: (session = {}, call) =>
      invoke("prepare", "", JSON.stringify({ ...SESSION, resumed: false, active: [name], ...session }), call),
    close: (reason = "session_closed", call) =>
      invoke("close", "", JSON.stringify({ session_id: SESSION.session_id, reason }), call),
    observe: (events, call) => {
      let seq = ++observed;
      const batch = events.map((e) => ({ seq: seq++, kind: e.kind, at_ms: Date.now(), data: e.data ?? {} }));
      observed = seq - 1;
      return invoke("observe", "", JSON.stringify({ session_id: SESSION.session_id, events: batch, dropped: 0 }), call);
    },
    searchProvider: (provider, query, searchOptions = {}, call) =>
      invoke(
        "search",
        provider,
        JSON.stringify({ session_id: SESSION.session_id, provider, query, options: searchOptions }),
        call,
      ),
    route: (route, request, call) =>
      invoke("route", route, JSON.stringify({ ...SESSION, route, request, active: [name] }), call),
    complete: (provider, request, call) =>
      invoke(
        "complete",
        provider,
        JSON.stringify({ provider, max_tokens: 1024, base_url: "", secret: null, session_id: null, ...request }),
        call,
      ),
    compact: (strategy, input, call) =>
      invoke(
        "compact",
        strategy,
        JSON.stringify({
          session_id: SESSION.session_id,
          strategy,
          reason: "requested",
          budget: 2000,
          hook_text: [],
          ...input,
        }),
        call,
      ),
    init: (payload = {}, call) =>
      invoke("init", "", JSON.stringify({ version: options.version ?? "1.0.0", reason: "approved", ...payload }), call),
    service: (route, request = {}, call) =>
      invoke("service", route, JSON.stringify(servicePayload(route, request)), call),
  };
}
