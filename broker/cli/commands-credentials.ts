/**
 * The commands about what the broker holds for extensions beyond their code:
 * the overview (`status`), secrets, sign-ins and model providers. Entries of
 * the one command table (commands.ts), in the order `tether help` lists them.
 */
import { EXIT, type Command } from "./command.js";

const OPERATORS = "docs/operators.md";

export const STATUS: Command = {
  name: "status",
  usage: [
    {
      usage: "status",
      summary: [
        "Each extension: approval, what it serves in sessions and as a daemon,",
        "and each secret it uses (set, signed in) — never a value",
      ],
    },
  ],
  help:
    "Read from the home; nothing boots. Daemon satellites (model providers) come from globally " +
    "enabled, approved extensions; they run in tether serve and the library. With the fleet's store " +
    "(--store, TETHER_STORE): its hosts, when each was last seen, and the sessions each serves now.",
  options: ["json"],
  doc: `${OPERATORS}#tether-status`,
  run: (ctx) =>
    ctx.withBroker(async (broker) => {
      const { overview, fleetStatus } = await import("../operator/status.js");
      const { renderOverview, renderFleet } = await import("./status.js");
      // With the fleet's store: the keys are the fleet's; its hosts and the sessions each serves now.
      const { FleetMember } = await import("../fleet.js");
      const member = broker.fleet instanceof FleetMember ? broker.fleet : null;
      if (member === null) {
        const o = overview(broker);
        ctx.out(o, renderOverview(o));
        return EXIT.ok;
      }
      const { overview: o, fleet } = await fleetStatus(broker, member);
      ctx.out({ ...o, fleet }, `${renderOverview(o)}\n\n${renderFleet(fleet, Date.now())}`);
      return EXIT.ok;
    }),
};

export const SECRET: Command = {
  name: "secret",
  usage: [
    {
      usage: "secret set <ext> <name> [--file <path>]",
      summary: [
        "Set a secret the broker sends in an extension's requests: the value",
        "from stdin or --file, never the command line",
      ],
    },
    { usage: "secret list [<ext>]", summary: ["Each declared secret: set or not, where it may go (never a value)"] },
    { usage: "secret unset <ext> <name>", summary: ["Remove a secret's value"] },
  ],
  help:
    "Values live in <home>/secrets/<ext>.<name> (mode 0600, folder 0700), outside the " +
    "store; a file or folder other users could read is refused with the chmod to run. " +
    "set reads stdin (typed without echo on a terminal, or piped) or --file, and refuses a value given " +
    "as an argument. Only a secret the installed manifest declares in a [[secret]] row can be set.",
  options: ["file", "json"],
  doc: "docs/secrets.md#the-operator-sets-it-tether-secret",
  needs: [1, "what to do: tether secret set <ext> <name>, tether secret list, tether secret unset <ext> <name>"],
  run: async (ctx) => {
    const { parseSecretArgs, runSecret } = await import("./secret.js");
    const args = parseSecretArgs(ctx.args, ctx.values as { file?: string });
    return ctx.withBroker(async (broker) => {
      const shown = await runSecret(broker, args);
      ctx.out(shown.value, shown.text);
      return EXIT.ok;
    });
  },
};

export const PROVIDERS: Command = {
  name: "providers",
  usage: [
    {
      usage: "providers [--session <id>]",
      summary: [
        "The model providers served now, their models, windows and prices;",
        "what is not served and why; the daemon scope's extensions",
      ],
    },
  ],
  help:
    "Providers come from extensions that are approved and enabled globally (tether session enable <name>), in " +
    "registry order; a provider name two extensions declare is served by the first, and the later serves none. " +
    "--session ranks and excludes as that session's saved preference " +
    "does (it enables nothing). Reads the store; boots nothing.",
  options: [["session", "Rank as this session's saved preference does"], "json"],
  doc: `${OPERATORS}#providers`,
  run: (ctx) =>
    ctx.withBroker(async (broker) => {
      const { providersOutput, renderProviders } = await import("./providers.js");
      const session = typeof ctx.values.session === "string" ? ctx.values.session : undefined;
      const view = providersOutput(broker, session);
      ctx.out(view, renderProviders(view, session));
      return EXIT.ok;
    }),
};

export const LOGIN: Command = {
  name: "login",
  usage: [
    {
      usage: "login <name> [<login>] [--timeout <s>]",
      summary: [
        "Sign an extension in to a service its [[login]] names: the broker runs",
        "the OAuth flow and keeps the tokens; the jail never sees them",
      ],
    },
  ],
  help:
    "A device login prints a URL and a code to enter there, then waits; an " +
    "authorization_code login prints a URL to open in a browser on this machine and " +
    "waits for its redirect to a loopback listener (--timeout, default 300 s). " +
    "Ctrl-C cancels. The tokens are kept in <home>/logins (mode 0600), refreshed " +
    "before they expire, and injected into the extension's requests as the [[secret]] " +
    "the login fills. <login> may be left out when the extension declares one.",
  options: ["timeout", "json"],
  doc: `${OPERATORS}#sign-ins`,
  needs: [1, "the extension name: tether login <name> [<login>]"],
  run: async (ctx) => (await import("./login.js")).runLogin(ctx),
};

export const LOGOUT: Command = {
  name: "logout",
  usage: [
    {
      usage: "logout <name> [<login>]",
      summary: [
        "Revoke (when the login declares how) and delete an extension's sign-in;",
        "every one of its logins without <login>",
      ],
    },
  ],
  help:
    "Asks the login's revocation_endpoint, when it declares one, to revoke the " +
    "refresh and access tokens, then deletes them whatever it answers (a failed " +
    "revocation is a note on stderr). Works for an extension no longer installed too.",
  options: ["json"],
  doc: `${OPERATORS}#sign-ins`,
  needs: [1, "the extension name: tether logout <name> [<login>]"],
  run: async (ctx) => (await import("./login.js")).runLogout(ctx),
};

export const LOGINS: Command = {
  name: "logins",
  usage: [{ usage: "logins [<name>]", summary: ["Each declared sign-in: signed in or not, expiry, refreshable"] }],
  help:
    "One line per [[login]] of the installed extensions (or of one): signed in as of when, " +
    "how many seconds the access token has left, whether it can be refreshed — never a token.",
  options: ["json"],
  doc: `${OPERATORS}#sign-ins`,
  run: async (ctx) => (await import("./login.js")).runLogins(ctx),
};

export const KEY: Command = {
  name: "key",
  usage: [
    {
      usage: "key create [--label <name>]",
      summary: [
        "Make this home's operator key: a fleet's approvals made here are",
        "signed with it; prints the line that trusts it on other hosts",
      ],
    },
    { usage: "key list", summary: ["This home's signing key and the keys it trusts"] },
    {
      usage: "key trust <ed25519:…> [label]",
      summary: ["Accept approvals signed by this key (from tether key create elsewhere)"],
    },
    { usage: "key untrust <key or id>", summary: ["Stop accepting approvals signed by it"] },
    {
      usage: "key rotate [--label <name>]",
      summary: ["A new signing key; with the fleet's store, approvals in force are", "signed again with it"],
    },
  ],
  help:
    "Keys live in the home, never in the fleet's database: <home>/operator.key (mode 0600) " +
    "signs, <home>/trusted-keys lists the public keys whose approvals this host serves. " +
    "A fleet's host serves an approval only when a trusted key signed exactly what " +
    "it grants; whoever can write the database can neither add a key nor approve.",
  options: ["label", "json"],
  doc: "docs/fleet.md#operator-keys",
  needs: [1, "what to do: tether key create | list | trust <key> | untrust <key> | rotate"],
  run: (ctx) =>
    ctx.withBroker(async (broker) => {
      const { runKey } = await import("./key.js");
      const shown = await runKey(broker, ctx.args, ctx.values.label as string | undefined);
      ctx.out(shown.value, shown.text);
      return EXIT.ok;
    }),
};
