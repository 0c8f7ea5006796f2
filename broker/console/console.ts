/**
 * The operator console under `/console` on `tether serve`'s HTTP server
 * (docs/console.md): server-rendered pages over the store and the broker, and
 * the same actions as `tether approve`, `revoke` and `uninstall`, made through
 * the same functions: the operator layer's (broker/operator/).
 *
 *   request ─► Host a loopback name, over TCP or the socket? (403) ─► asset?
 *           ─► login (≤ 10 failures a minute, 429) / logout
 *           ─► console session (any of its cookies)? GET: 303 to login · POST: 401
 *           ─► POST: Origin / Sec-Fetch-Site same-origin? (403)
 *           ─► form (≤ 64 KiB, 413; within 10 s, 408) ─► csrf? (403)
 *           ─► the page, or the action, one at a time: confirmation first (its digest `seen` in the form),
 *              then done only if the confirmation made again has that digest (else 409 and it again),
 *              and 303 with #flash
 *
 * Every response carries the security headers (headers.ts); an unexpected
 * failure is logged and answered 500 without its details.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Broker } from "../broker.js";
import { TetherError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import { approveExtension } from "../operator/approve.js";
import { SinceError } from "../operator/audit.js";
import { publishChanges } from "../operator/publish.js";
import { parseUtcSince } from "./utc.js";
import { reviewFor } from "../operator/review.js";
import { revokeExtension } from "../operator/revoke.js";
import { runUninstall } from "../operator/uninstall.js";
import { requestedGrants } from "../registry/grants.js";
import { sourceDiffs } from "../registry/source-changes.js";
import { describeData, extensionData, holdsData } from "../store/extension-data.js";
import { tokenMatches } from "../base/serve-token.js";
import { ASSETS_PREFIX, assetAt } from "./assets.js";
import { activity, auditPage, callDetail, type AuditPageFilter } from "../store/audit-pages.js";
import {
  ConsoleSessions,
  clearedCookie,
  crossSiteProblem,
  csrfMatches,
  hostProblem,
  overTls,
  sameSecret,
  sessionCookie,
  SignInLimit,
  type SignInLimitOptions,
  type ConsoleSession,
} from "./auth.js";
import { ActionForm, ApproveForm, FormError, LoginForm, parseForm, readForm, type Fields } from "./form.js";
import { redirect, send } from "./headers.js";
import type { LiveSessions } from "./live-sessions.js";
import { auditPageHtml, callPage, type AuditQueryText } from "./pages/audit.js";
import { confirmPage, seenOf, type ChangeLine, type Confirmation } from "./pages/confirm.js";
import { extensionsPage } from "./pages/extensions.js";
import { extensionHref, problemPage, when, type Chrome } from "./pages/layout.js";
import { loginPage } from "./pages/login.js";
import { reviewPage } from "./pages/review.js";
import { sessionsPage } from "./pages/sessions.js";
import { reachSummary } from "./reach.js";

export const CONSOLE_PREFIX = "/console";

export interface ConsoleOptions {
  readonly broker: Broker;
  /** The token that signs in (the serve token). */
  readonly token: string;
  readonly log: Logger;
  /** The server's live sessions. */
  readonly sessions: LiveSessions;
  /** How long a console session lasts without a request (default 30 minutes). */
  readonly idleMs?: number;
  /** How long a form body may take to arrive (default 10 s; then 408). */
  readonly bodyMs?: number;
  /** The bound on failed sign-ins (default: 10 a minute). */
  readonly signIns?: SignInLimitOptions;
  /** False once the server is shutting down: the console then answers 503. */
  readonly accepting?: () => boolean;
}

/** A refusal the console answers with a page: its status and what it says. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/** A rule as a shell word (the command line a confirmation shows). */
export const shellWord = (text: string): string =>
  /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;

export class ConsoleHttp {
  readonly #broker: Broker;
  readonly #token: string;
  readonly #log: Logger;
  readonly #live: LiveSessions;
  readonly #sessions: ConsoleSessions;
  readonly #accepting: () => boolean;
  readonly #bodyMs: number | undefined;
  readonly #signIns: SignInLimit;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ConsoleOptions) {
    this.#accepting = options.accepting ?? (() => true);
    this.#bodyMs = options.bodyMs;
    this.#signIns = new SignInLimit(options.signIns ?? {});
    this.#broker = options.broker;
    this.#token = options.token;
    this.#log = options.log;
    this.#live = options.sessions;
    this.#sessions = new ConsoleSessions(options.idleMs !== undefined ? { idleMs: options.idleMs } : {});
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let session: ConsoleSession | null = null;
    try {
      const url = new URL(req.url ?? "/", "http://console.invalid");
      const path = url.pathname;
      const host = hostProblem(req);
      if (host !== null)
        throw new Refusal(403, "Refused", `${host}: open the console at http://127.0.0.1:<port>/console/`);
      if (!this.#accepting())
        throw new Refusal(503, "Shutting down", "tether serve is shutting down: nothing was changed");
      const method = req.method ?? "GET";
      const get = method === "GET" || method === "HEAD";
      if (!get && method !== "POST")
        throw new Refusal(405, "Method not allowed", `${method} is not a method the console answers`);
      if (path.startsWith(ASSETS_PREFIX)) {
        const asset = get ? assetAt(path) : null;
        if (asset === null) throw new Refusal(404, "Not found", "No such asset");
        // Named by its content's hash: the same name always holds the same bytes.
        return send(res, 200, asset.body, { "content-type": asset.type });
      }
      if (path === CONSOLE_PREFIX) return redirect(res, `${CONSOLE_PREFIX}/`);
      if (path === `${CONSOLE_PREFIX}/login`)
        return get ? send(res, 200, loginPage(this.#broker.registry.operator)) : await this.#login(req, res);
      session = this.#sessions.find(req);
      if (session === null) {
        if (get) return redirect(res, `${CONSOLE_PREFIX}/login`);
        throw new Refusal(401, "Not signed in", "Sign in first: nothing was changed");
      }
      if (get) return this.#page(path, url.searchParams, session, res);
      const cross = crossSiteProblem(req);
      if (cross !== null) throw new Refusal(403, "Refused", `${cross}: nothing was changed`);
      const fields = await readForm(req, undefined, this.#bodyMs);
      const csrf = fields.get("csrf");
      if (csrf === undefined || csrf.length !== 1 || !csrfMatches(session, csrf[0]))
        throw new Refusal(
          403,
          "Refused",
          "The form's CSRF token is missing or is not this session's: " +
            "nothing was changed. Reload the page and try again",
        );
      const signedIn = session;
      // One action at a time: a confirm is checked against the state and done before
      // the next is looked at (two posts of one confirmation make one change).
      return await this.#serially(() => this.#post(path, fields, signedIn, res, overTls(req)));
    } catch (err) {
      this.#failed(err, session, res);
    }
  }

  /** Runs `work` after every action before it has finished. */
  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => {});
    return run;
  }

  #chrome(session: ConsoleSession, consume = true): Chrome {
    const flash = consume ? session.flash : null;
    if (consume) session.flash = null;
    return { csrf: session.csrf, operator: session.operator, flash, alerts: this.#broker.fleet?.alerts() ?? [] };
  }

  #failed(err: unknown, session: ConsoleSession | null, res: ServerResponse): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const chrome: Chrome = session === null ? { csrf: null } : this.#chrome(session, false);
    if (err instanceof Refusal)
      return send(
        res,
        err.status,
        problemPage(err.title, err.message, chrome, session === null ? undefined : `${CONSOLE_PREFIX}/`),
      );
    if (err instanceof FormError)
      return send(
        res,
        err.status,
        problemPage(
          err.status === 413 ? "Too large" : err.status === 408 ? "Too slow" : "Bad form",
          `${err.message}: nothing was changed`,
          chrome,
        ),
        err.status === 413 || err.status === 408 ? { connection: "close" } : {},
      );
    if (err instanceof TetherError)
      return send(
        res,
        err.code === "not_installed" ? 404 : 409,
        problemPage(err.code === "not_installed" ? "Not found" : "Refused", err.message, chrome, `${CONSOLE_PREFIX}/`),
      );
    this.#log.error("console: a request failed", {
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
    send(
      res,
      500,
      problemPage(
        "Something failed",
        "The console could not answer this request; the server's log says why",
        chrome,
        `${CONSOLE_PREFIX}/`,
      ),
    );
  }

  // ── sign-in ─────────────────────────────────────────────────────────────

  async #login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const cross = crossSiteProblem(req);
    if (cross !== null) throw new Refusal(403, "Refused", cross);
    const form = parseForm(LoginForm, await readForm(req, undefined, this.#bodyMs));
    const wait = this.#signIns.blocked();
    if (wait !== null) {
      this.#log.warn("console: refused a sign-in: too many failed sign-ins");
      return send(
        res,
        429,
        loginPage(
          this.#broker.registry.operator,
          `Too many failed sign-ins: try again in ${wait} s. Nothing was signed in`,
        ),
        { "retry-after": String(wait) },
      );
    }
    if (!tokenMatches(form.token, this.#token)) {
      this.#signIns.failed();
      this.#log.info("console: refused a sign-in with a wrong token");
      return send(res, 401, loginPage(this.#broker.registry.operator, "That is not the token: nothing was signed in"));
    }
    const operator =
      form.operator !== undefined && form.operator !== "" ? form.operator : this.#broker.registry.operator;
    const session = this.#sessions.create(operator);
    redirect(res, `${CONSOLE_PREFIX}/`, { "set-cookie": sessionCookie(session, overTls(req)) });
  }

  // ── pages ───────────────────────────────────────────────────────────────

  #page(path: string, query: URLSearchParams, session: ConsoleSession, res: ServerResponse): void {
    const registry = this.#broker.registry;
    if (path === `${CONSOLE_PREFIX}/`) {
      const rows = registry.list().map((installed) => {
        const status = registry.status(installed);
        return {
          name: installed.name,
          version: installed.version,
          description: installed.description,
          status,
          reach: reachSummary(installed, status, registry.latestApproval(installed.name)),
        };
      });
      return send(res, 200, extensionsPage(rows, this.#chrome(session)));
    }
    const ext = /^\/console\/ext\/([^/]+)$/.exec(path);
    if (ext !== null) {
      const name = segment(ext[1]!);
      const { installed, review } = reviewFor(this.#broker, name);
      const sources = sourceDiffs(review.changes?.sources ?? [], (sha) => registry.sourceContent(sha));
      return send(
        res,
        200,
        reviewPage({ installed, review, approval: registry.latestApproval(name), sources }, this.#chrome(session)),
      );
    }
    if (path === `${CONSOLE_PREFIX}/audit`) {
      const { filter, text, problem } = auditFilter(query);
      const html = auditPageHtml(
        text,
        auditPage(this.#broker.store, filter),
        activity(this.#broker.store, filter),
        problem,
        this.#chrome(session),
      );
      return send(res, 200, html);
    }
    const call = /^\/console\/audit\/call\/(\d{1,15})$/.exec(path);
    if (call !== null) {
      const detail = callDetail(this.#broker.store, Number(call[1]));
      if (detail === null) throw new Refusal(404, "Not found", `No call ${call[1]} in the ledger`);
      return send(res, 200, callPage(detail, this.#chrome(session)));
    }
    if (path === `${CONSOLE_PREFIX}/sessions`) {
      void this.#live.list().then(
        (list) => send(res, 200, sessionsPage(list, this.#chrome(session))),
        (err) => this.#failed(err, session, res),
      );
      return;
    }
    throw new Refusal(404, "Not found", `Nothing at ${path}`);
  }

  // ── actions ─────────────────────────────────────────────────────────────

  async #post(
    path: string,
    fields: Fields,
    session: ConsoleSession,
    res: ServerResponse,
    secure: boolean,
  ): Promise<void> {
    if (path === `${CONSOLE_PREFIX}/logout`) {
      this.#sessions.end(session);
      return redirect(res, `${CONSOLE_PREFIX}/login`, { "set-cookie": clearedCookie(secure) });
    }
    const ext = /^\/console\/ext\/([^/]+)\/(approve|revoke|uninstall)$/.exec(path);
    if (ext !== null) {
      const name = segment(ext[1]!);
      const action = ext[2] as "approve" | "revoke" | "uninstall";
      if (action === "approve") return this.#approve(name, fields, session, res);
      const form = parseForm(ActionForm, fields);
      const installed = this.#broker.registry.require(name);
      const approval = this.#broker.registry.latestApproval(name);
      const inForce = approval !== null && approval.revokedAt === null ? approval : null;
      const by = session.operator;
      if (action === "revoke") {
        {
          const changes =
            inForce === null
              ? [`${name} has no approval in force: nothing changes`]
              : [
                  `The approval of ${name} ${installed.version} made by ${inForce.approvedBy} ` +
                    `at ${when(inForce.approvedAt)} is revoked, recorded as revoked by ${by}`,
                  "Its calls are refused from then on; satellites already running stop at their next call",
                  "The approval history stays; approving again is a new approval",
                ];
          const c: Confirmation = {
            title: `Revoke ${name}?`,
            action: path,
            changes,
            command: `tether revoke ${shellWord(name)}`,
            fields: [],
            back: extensionHref(name),
            danger: true,
            subject: [installed.manifestHash, installed.artifactHash, inForce?.id ?? null],
          };
          if (!this.#confirmed(form, c)) return this.#confirm(res, session, c, form.confirm === "yes");
        }
        const done = revokeExtension(this.#broker, name, by);
        session.flash = `${done.text}${await this.#publish()}`;
        return redirect(res, extensionHref(name));
      }
      {
        const data = extensionData(this.#broker.store, this.#broker.home, name);
        const changes = [
          inForce === null
            ? `${name} has no approval in force`
            : `The approval of ${name} ${installed.version} made by ${inForce.approvedBy} ` +
              `at ${when(inForce.approvedAt)} is revoked, recorded as revoked by ${by}`,
          `The install of ${name} ${installed.version} is removed; installing it again needs a new approval`,
          holdsData(data)
            ? `What it stored stays (a reinstall finds it again; tether ` +
              `uninstall ${name} --purge removes it): ${describeData(data).join("; ")}`
            : "It had stored nothing",
          "The approval history and the ledger stay",
        ];
        const c: Confirmation = {
          title: `Uninstall ${name}?`,
          action: path,
          changes,
          command: `tether uninstall ${shellWord(name)}`,
          fields: [],
          back: extensionHref(name),
          danger: true,
          subject: [installed.manifestHash, installed.artifactHash, inForce?.id ?? null],
        };
        if (!this.#confirmed(form, c)) return this.#confirm(res, session, c, form.confirm === "yes");
      }
      const { text } = await runUninstall(this.#broker, name, false, by);
      session.flash = `${text}${await this.#publish()}`;
      return redirect(res, `${CONSOLE_PREFIX}/`);
    }
    const live = /^\/console\/sessions\/([^/]+)\/(reload|close)$/.exec(path);
    if (live !== null) {
      const id = segment(live[1]!);
      const action = live[2] as "reload" | "close";
      const form = parseForm(ActionForm, fields);
      const found = (await this.#live.list()).find((s) => s.id === id);
      if (found === undefined) throw new Refusal(404, "Not found", `No live session '${id}' on this server`);
      {
        const active = found.extensions.filter((e) => e.state === "active").map((e) => e.name);
        const changes =
          action === "reload"
            ? [
                `Session ${id} works out again which extensions are active ` +
                  `(now: ${active.join(", ") || "none"}); preferences changed since it opened apply`,
                "Managed extensions close and prepare again; calls in flight finish",
              ]
            : [
                `Session ${id} (workspace ${found.workspace}) closes: ` +
                  `its extensions' satellites stop, SessionEnd hooks run`,
                "A client that uses it afterwards is told it is unknown",
              ];
        const c: Confirmation = {
          title: `${action === "reload" ? "Reload" : "Close"} session ${id}?`,
          action: path,
          changes,
          command: `session.${action} {"session": ${JSON.stringify(id)}} (docs/api.md)`,
          fields: [],
          back: `${CONSOLE_PREFIX}/sessions`,
          danger: action === "close",
          subject: [found.workspace, found.extensions],
        };
        if (!this.#confirmed(form, c)) return this.#confirm(res, session, c, form.confirm === "yes");
      }
      if (action === "reload") {
        const report = await this.#live.reload(id);
        const failed = report.failed.map((f) => `${f.name} (${f.reason})`);
        session.flash =
          `reloaded session ${id}: activated ${report.activated.join(", ") || "none"}; ` +
          `deactivated ${report.deactivated.join(", ") || "none"}` +
          (failed.length > 0 ? `; still inactive: ${failed.join("; ")}` : "");
      } else {
        const notes = await this.#live.close(id);
        session.flash = `closed session ${id}${notes.length > 0 ? `; ${notes.join("; ")}` : ""}`;
      }
      return redirect(res, `${CONSOLE_PREFIX}/sessions`);
    }
    throw new Refusal(404, "Not found", `Nothing at ${path}`);
  }

  async #approve(name: string, fields: Fields, session: ConsoleSession, res: ServerResponse): Promise<void> {
    const form = parseForm(ApproveForm, fields);
    const installed = this.#broker.registry.require(name);
    const requested = requestedGrants(installed.manifest);
    const chosen = new Set(form.rule);
    const unknown = [...chosen].filter((rule) => !requested.net.includes(rule));
    if (unknown.length > 0)
      throw new Refusal(400, "Bad form", `${unknown.join(", ")}: not requested by '${name}': nothing was changed`);
    // As the command would say it: every rule checked is --all, some is --only, none cannot be said.
    const only = requested.net.filter((rule) => chosen.has(rule));
    if (requested.net.length > 0 && only.length === 0)
      throw new Refusal(
        400,
        "Nothing to grant",
        `Leave at least one rule checked: tether approve has no way to grant none of the ` +
          `rules '${name}' asks for (--only names the rules it grants). Nothing was changed`,
      );
    const request: { all?: true; only?: string[] } =
      requested.net.length === 0 ? {} : only.length === requested.net.length ? { all: true } : { only };
    const command =
      `tether approve ${shellWord(name)}${request.all === true ? " --all" : ""}` +
      (request.only ?? []).map((rule) => ` --only ${shellWord(rule)}`).join("");
    const by = session.operator;
    {
      const { review } = reviewFor(this.#broker, name);
      const left = requested.net.filter((rule) => !chosen.has(rule));
      const previous = this.#broker.registry.latestApproval(name);
      const plan =
        review.migrations !== null && !("error" in review.migrations)
          ? review.migrations.migrations.filter((m) => m.applied === null)
          : [];
      const changes: ChangeLine[] = [
        `${name} ${installed.version} is approved as installed ` +
          `(manifest sha256 ${installed.manifestHash.slice(0, 16)}…, ` +
          `artifact sha256 ${installed.artifactHash.slice(0, 16)}…), recorded as approved by ${by}`,
        requested.net.length === 0
          ? "Egress: none (it asks for no network)"
          : { text: `Egress granted (${only.length} of ${requested.net.length} rules):`, items: only },
        ...(left.length > 0
          ? [{ text: `Egress left out (${left.length}; a later approval keeps it out unless --all):`, items: left }]
          : []),
        `Tools: ${requested.tools.join(", ") || "none"}; hooks: ${requested.hooks.join(", ") || "none"}; ` +
          `commands: ${requested.commands.map((c) => `/${c}`).join(", ") || "none"}`,
        ...(requested.secrets.length > 0
          ? [`Secrets the broker sends for it: ${requested.secrets.map((s) => s.name).join(", ")}`]
          : []),
        ...(plan.length > 0
          ? [
              `Its database first runs ${plan.length} migration(s), in ` +
                `one transaction: ${plan.map((m) => m.name).join(", ")}`,
            ]
          : []),
        ...(installed.manifest.init !== undefined ? ["Its initializer runs right after"] : []),
        ...(review.widens ? ["This upgrade asks for MORE than was approved (see the review's diff)"] : []),
        ...(previous !== null && previous.revokedAt === null
          ? [`It replaces the approval made by ${previous.approvedBy} at ${when(previous.approvedAt)}`]
          : []),
      ];
      const c: Confirmation = {
        title: `Approve ${name} ${installed.version}?`,
        action: `${extensionHref(name)}/approve`,
        changes,
        command,
        fields: only.map((rule) => ["rule", rule] as const),
        back: extensionHref(name),
        subject: [
          installed.manifestHash,
          installed.artifactHash,
          previous?.id ?? null,
          previous?.revokedAt ?? null,
          plan.map((m) => m.name),
        ],
      };
      if (!this.#confirmed(form, c)) return this.#confirm(res, session, c, form.confirm === "yes");
    }
    let published = "";
    const done = await approveExtension(this.#broker, name, {
      ...request,
      by,
      recorded: async () => (published = await this.#publish()),
    });
    session.flash = `${done.text}${published}`;
    redirect(res, extensionHref(name));
  }

  /** Whether the form confirms `c` as it stands now: confirm=yes with the digest of this very confirmation. */
  #confirmed(form: { confirm?: "yes" | undefined; seen?: string | undefined }, c: Confirmation): boolean {
    return form.confirm === "yes" && form.seen !== undefined && sameSecret(form.seen, seenOf(c));
  }

  /** The confirmation (200); 409 when a confirm was posted for something that no longer stands. */
  #confirm(res: ServerResponse, session: ConsoleSession, c: Confirmation, stale = false): void {
    send(res, stale ? 409 : 200, confirmPage(c, this.#chrome(session, false), stale));
  }

  /** Sends the fleet what changed, when this broker is a host of one; what to add to the flash. */
  async #publish(): Promise<string> {
    const publication = await publishChanges(this.#broker.fleet);
    if (publication.state === "failed") {
      this.#log.warn("console: a change did not reach the fleet's store", { error: publication.error.message });
      return `; NOT published to the fleet (${publication.error.message})`;
    }
    return publication.state === "published" ? "; published to the fleet" : "";
  }
}

/** A path segment decoded (a malformed escape is a 400). */
function segment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new Refusal(400, "Bad request", "The address is not valid");
  }
}

/** The largest time a Date holds (±100,000,000 days from 1970). */
const MAX_DATE_MS = 8.64e15;

/**
 * The audit page's filters from its query string: what they
 * mean, what the form shows back, and what could not be read.
 */
function auditFilter(q: URLSearchParams): { filter: AuditPageFilter; text: AuditQueryText; problem: string | null } {
  const value = (key: string) => (q.get(key) ?? "").trim().slice(0, 512);
  const text = {
    extension: value("extension"),
    session: value("session"),
    outcome: value("outcome"),
    decision: value("decision"),
    from: value("from"),
    to: value("to"),
  };
  const problems: string[] = [];
  const time = (key: "from" | "to"): number | undefined => {
    if (text[key] === "") return undefined;
    try {
      const at = parseUtcSince(text[key]);
      // A time no date can hold (a duration of 10^400 hours) names no range: said, not a failed page.
      if (!Number.isFinite(at) || Math.abs(at) > MAX_DATE_MS) throw new SinceError(`${text[key]}: out of range`);
      return at;
    } catch (err) {
      if (!(err instanceof SinceError)) throw err;
      problems.push(`${key} '${text[key]}': expected a date like 2026-12-01T10:00 or a duration back from now like 2h`);
      return undefined;
    }
  };
  const pageText = value("page");
  const page = /^\d{1,9}$/.test(pageText) && Number(pageText) >= 1 ? Number(pageText) : 1;
  if (pageText !== "" && page === 1 && pageText !== "1")
    problems.push(`page '${pageText}': expected a whole number from 1`);
  let decision: "allowed" | "denied" | undefined;
  if (text.decision === "allowed" || text.decision === "denied") decision = text.decision;
  else if (text.decision !== "") problems.push(`decision '${text.decision}': expected allowed or denied`);
  const nonEmpty = (s: string) => (s === "" ? undefined : s);
  const filter: AuditPageFilter = {
    extension: nonEmpty(text.extension),
    session: nonEmpty(text.session),
    outcome: nonEmpty(text.outcome),
    decision,
    from: time("from"),
    to: time("to"),
    page,
  };
  return { filter, text: { ...text, page }, problem: problems.length > 0 ? problems.join("; ") : null };
}
