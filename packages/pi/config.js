/**
 * Where `tether serve` is and how to authenticate, from options or the
 * environment (options win): the same defaults `tether serve` itself uses, so
 * a plain `tether serve` and a plain `pi -e @tether/pi` find each other.
 */
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** A token file is 64 hex characters; anything much bigger is not one. */
const MAX_TOKEN_FILE_BYTES = 4096;
/** `session.open`'s id rule (docs/api.md). */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/**
 * @typedef {object} TetherPiOptions
 * @property {string} [url] `ws://127.0.0.1:<port>` or `ws+unix:<socket path>` (env TETHER_URL)
 * @property {string} [token] the bearer token itself (env TETHER_TOKEN)
 * @property {string} [tokenFile] a file holding it (env TETHER_TOKEN_FILE)
 * @property {string} [home] the Tether home the defaults are under (env TETHER_HOME, else ~/.tether)
 * @property {string} [session] the Tether session id (env TETHER_SESSION, else `pi-<pi's session id>`)
 */

/**
 * @typedef {object} TetherPiConfig
 * @property {string} url
 * @property {string} token
 * @property {string} tokenSource where the token came from, for messages (never the token)
 * @property {string | undefined} session
 */

/**
 * @param {TetherPiOptions} options
 * @param {NodeJS.ProcessEnv} env
 * @returns {TetherPiConfig}
 */
export function resolveConfig(options, env) {
  const pick = (/** @type {string | undefined} */ given, /** @type {string} */ name) => {
    const value = given ?? env[name];
    return value === undefined || value === "" ? undefined : value;
  };
  const home = pick(options.home, "TETHER_HOME") ?? join(homedir(), ".tether");
  const url = pick(options.url, "TETHER_URL") ?? `ws+unix:${join(home, "tether.sock")}`;
  if (!/^(wss?:\/\/|ws\+unix:)/.test(url))
    throw new Error(
      `Tether: TETHER_URL is '${url.slice(0, 200)}': use ws://127.0.0.1:<port> or ws+unix:<socket path>.`,
    );
  const session = pick(options.session, "TETHER_SESSION");
  if (session !== undefined && !SESSION_ID.test(session))
    throw new Error(
      "Tether: TETHER_SESSION must be letters, digits and . _ : - (at most 128, starting with a letter or digit).",
    );
  const direct = pick(options.token, "TETHER_TOKEN");
  if (direct !== undefined) return { url, token: direct.trim(), tokenSource: "TETHER_TOKEN", session };
  const file = pick(options.tokenFile, "TETHER_TOKEN_FILE") ?? join(home, "serve.token");
  return { url, token: readToken(file), tokenSource: file, session };
}

/** @param {string} file */
function readToken(file) {
  let size;
  try {
    size = statSync(file).size;
  } catch {
    throw new Error(
      `Tether: no token file at ${file}. Start \`tether serve\` once (it creates it), ` +
        "or set TETHER_TOKEN_FILE to the file it printed, or TETHER_TOKEN to the token.",
    );
  }
  if (size > MAX_TOKEN_FILE_BYTES)
    throw new Error(`Tether: ${file} is ${size} bytes, not a token file. Set TETHER_TOKEN_FILE to serve's token file.`);
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "unreadable";
    throw new Error(`Tether: cannot read the token file ${file} (${code}). Check its owner and mode (600).`);
  }
}
