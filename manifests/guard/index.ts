/**
 * guard: asked before every tool call and every capability call in a session.
 *
 * - `tool_call`: blocks arguments that hold a destructive shell command, with a
 *   reason the model can act on (what was found, what to do instead).
 * - `cap_call`: blocks a capability call whose target host the operator flagged
 *   with `/flag <host>` (kept in the guard's kv).
 */
import { kv } from "@tether/cap";
import { hook, outcome, proceed, refuse, text, type Command } from "@tether/ext";

/** Reads one field of a value of unknown shape (works whether the payload is typed or not). */
function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

/** Destructive commands, each with what the model should do instead. */
const DANGEROUS: readonly { readonly pattern: RegExp; readonly what: string; readonly instead: string }[] = [
  {
    pattern: /\brm\s+-(?:[a-z]*r[a-z]*f|[a-z]*f[a-z]*r)[a-z]*\b/i,
    what: "`rm -rf`",
    instead: "delete specific files by name, or ask the user to run it themselves",
  },
  {
    pattern: /\bmkfs(?:\.\w+)?\b/,
    what: "`mkfs` (formats a filesystem)",
    instead: "ask the user; formatting is never done on their behalf",
  },
  {
    pattern: /\bdd\b[^\n]*\bof=\/dev\//,
    what: "`dd` onto a device",
    instead: "ask the user; writing raw devices is never done on their behalf",
  },
  { pattern: /:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:/, what: "a fork bomb", instead: "do not run it" },
  {
    pattern: /\bgit\s+push\b[^\n]*(?:--force\b|\s-f\b)/,
    what: "`git push --force`",
    instead: "push without --force, or ask the user",
  },
];

/** Every string in the arguments (keys too), so `rm -rf` is found wherever it sits and however JSON escapes it. */
function strings(value: unknown, depth = 0): string[] {
  if (typeof value === "string") return [value];
  if (depth > 16 || typeof value !== "object" || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item) => strings(item, depth + 1));
  return Object.entries(value).flatMap(([key, item]) => [key, ...strings(item, depth + 1)]);
}

const FLAGGED = "flagged";

async function flagged(): Promise<string[]> {
  const value = await kv.get(FLAGGED);
  return Array.isArray(value) ? value.filter((h): h is string => typeof h === "string") : [];
}

/**
 * One normal form for what the operator flags, the same the broker uses for
 * the judged request: the URL parser's host (lower case, IDN to A-labels,
 * fullwidth folded, IPv4 in any spelling to dotted, IPv6 compressed), with no
 * trailing dot and no brackets. `api.evil.example`, `https://API.evil.example./x`
 * and `127.1` all flag one thing.
 */
function normaliseHost(input: string): string | null {
  let trimmed = input.trim();
  if (trimmed === "" || /\s/.test(trimmed)) return null;
  if (!trimmed.includes("://"))
    trimmed = `http://${trimmed.includes(":") && !trimmed.startsWith("[") && trimmed.split(":").length > 2 ? `[${trimmed}]` : trimmed}`;
  let host: string;
  try {
    host = new URL(trimmed).hostname;
  } catch {
    return null;
  }
  host = host.replace(/^\[|\]$/g, "").replace(/\.$/, "");
  // An IPv4-mapped IPv6 address is that IPv4 (the broker shows the IPv4 every IPv6 form carries).
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped !== null) {
    const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
    host = `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return host === "" ? null : host;
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** A judged request's host and every address it resolved to (and the IPv4 each carries): what a flag may name. */
function reached(request: unknown): string[] {
  const host = field(request, "host");
  const addresses = field(request, "addresses");
  const out = typeof host === "string" ? [host] : [];
  if (Array.isArray(addresses)) {
    for (const a of addresses) {
      for (const key of ["address", "ipv4"]) {
        const value = field(a, key);
        if (typeof value === "string") out.push(value);
      }
    }
  }
  return out;
}

/** A flagged name covers itself and every name under it; a flagged address only itself. */
const covers = (flag: string, host: string) =>
  host === flag || (!IPV4.test(flag) && !flag.includes(":") && host.endsWith(`.${flag}`));

export const tools = {};

export const hooks = {
  tool_call: hook("tool_call", (call) => {
    const argsText = strings(field(call, "arguments")).join("\n");
    for (const rule of DANGEROUS) {
      if (rule.pattern.test(argsText)) {
        return {
          block: `guard: the arguments to '${String(field(call, "tool"))}' contain ${rule.what}, which this workspace does not allow; ${rule.instead}.`,
        };
      }
    }
    return proceed;
  }),
  cap_call: hook("cap_call", async (call) => {
    if (field(call, "capability") !== "net.fetch") return proceed;
    // The broker shows the request as it judged it: the host in its normal form and every
    // address it resolved to, so no spelling of a flagged host or address slips past.
    const request = field(call, "request");
    if (request === undefined) return proceed;
    const list = await flagged();
    for (const what of reached(request)) {
      const hit = list.find((h) => covers(h, what));
      if (hit !== undefined) {
        const host = String(field(request, "host"));
        const reaching = what === host ? host : `${host} (reaching ${what})`;
        return {
          block: `guard: ${reaching} is flagged by the operator (/flag ${hit}); '${String(field(call, "extension"))}' may not reach it from ${String(field(call, "within"))}. Tell the user instead of retrying.`,
        };
      }
    }
    return proceed;
  }),
};

export const commands: Record<string, Command> = {
  flag: async (args) => {
    if (args.trim() === "") {
      const list = await flagged();
      return outcome([text(list.length === 0 ? "no hosts are flagged" : `flagged: ${list.join(", ")}`)]);
    }
    const host = normaliseHost(args);
    if (host === null) return refuse(`not a host: '${args.trim().slice(0, 100)}' (expected /flag api.example.com)`);
    const list = await flagged();
    if (!list.includes(host)) await kv.put(FLAGGED, [...list, host]);
    return outcome([text(`flagged ${host}: capability calls that reach it are refused`)]);
  },
  unflag: async (args) => {
    const host = normaliseHost(args);
    if (host === null) return refuse(`not a host: '${args.trim().slice(0, 100)}' (expected /unflag api.example.com)`);
    const list = await flagged();
    if (!list.includes(host)) return refuse(`${host} is not flagged`);
    await kv.put(
      FLAGGED,
      list.filter((h) => h !== host),
    );
    return outcome([text(`unflagged ${host}`)]);
  },
};
