/**
 * Test support: a throwaway, real PostgreSQL server for one test run (the
 * groundwork for several brokers sharing one PostgreSQL store).
 *
 * `startPostgres()` finds the server binaries (`initdb`, `pg_ctl`, `postgres`:
 * on PATH first, then the newest /usr/lib/postgresql/<version>/bin — Debian's
 * `postgresql` package), `initdb`s a cluster in a fresh temp dir (locale C,
 * UTF8, no fsync), starts it on 127.0.0.1 on a free port and on a Unix socket
 * inside that dir, waits until it accepts connections (`pg_ctl start -w`, then
 * `pg_isready`), creates the database `tether` and returns its URL.
 *
 * Authentication: TCP (127.0.0.1) needs the superuser's password, generated
 * per server (scram-sha-256), so other users of the machine cannot use the
 * server; the socket is trusted, because its folder is the temp dir (0700).
 *
 * PostgreSQL refuses to run as root: when the tests run as root, initdb and the
 * server run as `nobody` (uid/gid 65534, through `setpriv`), and the temp dir
 * is theirs. Clients (psql, pg_isready, the broker) may still run as root.
 *
 * Cleanup: `stop()` is `pg_ctl stop -m fast`, then the dir is removed. When
 * the process exits without calling it, an `exit` handler stops the server
 * (`-m immediate`) and removes the dir; when the process is killed (a signal,
 * SIGKILL included, where no handler runs), a small detached watchdog that
 * waits on the process's pid does the same within a second.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  accessSync,
  appendFileSync,
  chownSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";

/** A running throwaway server. */
export interface PostgresServer {
  /** `postgres://tether:<password>@127.0.0.1:<port>/tether` (TCP). */
  readonly url: string;
  /** The same database over the Unix socket: `postgres://tether@/tether?host=<dir>&port=<port>`. */
  readonly socketUrl: string;
  /** The temp dir: the data dir is `<dir>/data`, the socket `<dir>/.s.PGSQL.<port>`, the log `<dir>/server.log`. */
  readonly dir: string;
  readonly port: number;
  /** The folder of the PostgreSQL binaries used (its `psql` and `pg_isready` are the client tools to use). */
  readonly bin: string;
  /** Stops the server (`pg_ctl stop -m fast`) and removes `dir`. Idempotent. */
  stop(): Promise<void>;
  /** A fault: stops the server (fast: every client cut) keeping its data, for `resume`. */
  halt(): Promise<void>;
  /** Starts a halted server again, on the same port and data. */
  resume(): Promise<void>;
}

const USER = "tether";
const DATABASE = "tether";
/** The unprivileged user the server runs as when the tests run as root (nobody/nogroup on Debian). */
const NOBODY = 65534;
const INSTALL =
  "install Debian's PostgreSQL server: `sudo apt-get install -y postgresql` (or run `make postgres`, which does it when root)";

/** The folder holding `initdb`, `pg_ctl` and `postgres` (and `pg_isready`, `psql`): PATH first, then the newest /usr/lib/postgresql/<v>/bin. */
export function findPostgresBin(): string {
  const complete = (dir: string): boolean =>
    ["initdb", "pg_ctl", "postgres", "pg_isready", "psql"].every((b) => isExecutable(join(dir, b)));
  for (const entry of (process.env.PATH ?? "").split(delimiter)) {
    if (entry === "" || !isExecutable(join(entry, "initdb"))) continue;
    // /usr/local/bin/initdb may be a symlink into the real folder (which has the rest).
    const real = dirname(realpathSync(join(entry, "initdb")));
    if (complete(real)) return real;
    if (complete(entry)) return entry;
  }
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+(\.\d+)?$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) if (complete(join(root, v, "bin"))) return join(root, v, "bin");
  throw new Error(
    `no PostgreSQL server binaries (initdb, pg_ctl, postgres, pg_isready, psql) on PATH or under ${root}/<version>/bin: ${INSTALL}`,
  );
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Starts a throwaway server; see the file's comment. */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = findPostgresBin();
  const asRoot = process.getuid?.() === 0;
  const dir = makeDir(asRoot);
  const data = join(dir, "data");
  const log = join(dir, "server.log");
  const password = randomBytes(18).toString("base64url");
  // The server's commands: as `nobody` under root, as ourselves otherwise. A minimal environment (no PG* leaking in).
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" };
  const server = (cmd: string, args: readonly string[]): readonly [string, readonly string[]] =>
    asRoot
      ? ["setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", join(bin, cmd), ...args]]
      : [join(bin, cmd), args];
  const run = (cmd: string, args: readonly string[]) => {
    const [file, argv] = server(cmd, args);
    return exec(file, argv, { cwd: dir, env });
  };

  let watchdog: ChildProcess | undefined;
  let stopped = false;
  const onExit = (): void => {
    // Synchronous on purpose: nothing asynchronous runs in an `exit` handler.
    if (stopped) return;
    stopped = true;
    watchdog?.kill();
    const [file, argv] = server("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w", "-t", "10"]);
    if (existsSync(join(data, "postmaster.pid"))) spawnSync(file, argv, { cwd: dir, env, stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", onExit);
  const fail = (error: unknown): never => {
    onExit();
    process.off("exit", onExit);
    throw error;
  };

  try {
    const pwfile = join(dir, "pwfile");
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (asRoot) chownSync(pwfile, NOBODY, NOBODY);
    await run("initdb", [
      "-D",
      data,
      "-U",
      USER,
      `--pwfile=${pwfile}`,
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "--locale=C",
      "-E",
      "UTF8",
      "--no-sync",
      "--no-instructions",
    ]).catch((e: unknown) => {
      throw new Error(
        `initdb failed${asRoot ? ` (as uid ${NOBODY}, through setpriv: the temp dir ${dir} must be reachable by it)` : ""}: ${message(e)}`,
      );
    });
    rmSync(pwfile);
    appendFileSync(
      join(data, "postgresql.conf"),
      [
        "",
        "# tests/support/postgres-server.ts: a throwaway server",
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        "unix_socket_permissions = 0700",
        "max_connections = 100",
        "fsync = off",
        "synchronous_commit = off",
        "full_page_writes = off",
        "logging_collector = off",
        "",
      ].join("\n"),
    );
    watchdog = startWatchdog(data, dir);
    // A free port can be taken between our probe and the server's bind: try a few.
    let port = 0;
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await run("pg_ctl", ["start", "-D", data, "-l", log, "-w", "-t", "60", "-o", `-p ${port}`]);
        break;
      } catch (e) {
        const tail = readTail(log);
        if (attempt < 4 && /could not bind|Address already in use|could not create any TCP\/IP sockets/.test(tail))
          continue;
        throw new Error(`the PostgreSQL server did not start (${join(bin, "postgres")}): ${message(e)}\n${tail}`);
      }
    }
    await untilReady(bin, dir, port);
    await exec(
      join(bin, "psql"),
      [
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        dir,
        "-p",
        String(port),
        "-U",
        USER,
        "-d",
        "postgres",
        "-c",
        `CREATE DATABASE ${DATABASE}`,
      ],
      { env },
    );

    const stop = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      process.off("exit", onExit);
      watchdog?.kill();
      try {
        await run("pg_ctl", ["stop", "-D", data, "-m", "fast", "-w", "-t", "60"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    const halt = () => run("pg_ctl", ["stop", "-D", data, "-m", "fast", "-w", "-t", "60"]).then(() => {});
    const resume = async (): Promise<void> => {
      await run("pg_ctl", ["start", "-D", data, "-l", log, "-w", "-t", "60", "-o", `-p ${port}`]);
      await untilReady(bin, dir, port);
    };
    return {
      halt,
      resume,
      url: `postgres://${USER}:${password}@127.0.0.1:${port}/${DATABASE}`,
      socketUrl: `postgres://${USER}@/${DATABASE}?host=${encodeURIComponent(dir)}&port=${port}`,
      dir,
      port,
      bin,
      stop,
    };
  } catch (e) {
    return fail(e);
  }
}

/** A fresh temp dir the server's user owns (mode 0700), short enough for a Unix socket path. */
function makeDir(asRoot: boolean): string {
  // Under root the server runs as nobody, which must reach the dir: TMPDIR when it can, else /tmp.
  const bases = asRoot ? [...new Set([tmpdir(), "/tmp"])] : [tmpdir()];
  for (const base of bases) {
    const dir = mkdtempSync(join(base, "tether-pg-"));
    if (!asRoot) return dir;
    chownSync(dir, NOBODY, NOBODY);
    if (
      spawnSync("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", "test", "-w", dir])
        .status === 0
    )
      return dir;
    rmSync(dir, { recursive: true, force: true });
  }
  throw new Error(
    `the tests run as root, so PostgreSQL runs as uid ${NOBODY} (nobody), which cannot reach a temp dir under ${bases.join(" or ")}: set TMPDIR to a folder it can reach`,
  );
}

/**
 * A detached watchdog: when this process dies without cleaning up (killed),
 * it stops the server at once (SIGQUIT to the postmaster: immediate shutdown)
 * and removes the dir. Killed itself by `stop()` and the exit handler.
 */
function startWatchdog(data: string, dir: string): ChildProcess {
  const script = [
    'while kill -0 "$1" 2>/dev/null; do sleep 1; done',
    'pid=$(head -n 1 "$2/postmaster.pid" 2>/dev/null) && kill -QUIT "$pid" 2>/dev/null',
    'for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done',
    'rm -rf "$3"',
  ].join("\n");
  const child = spawn("bash", ["-c", script, "tether-pg-watchdog", String(process.pid), data, dir], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  return child;
}

/** Waits until the server accepts connections on its socket (`pg_isready`); `pg_ctl start -w` already waited, this confirms it. */
async function untilReady(bin: string, dir: string, port: number): Promise<void> {
  const args = ["-q", "-h", dir, "-p", String(port), "-d", "postgres", "-U", USER];
  for (let waited = 0; ; waited += 50) {
    // 0 = accepting, 1 = rejecting (starting up), 2 = no response, 3 = bad parameters.
    const code = await new Promise<number | null>((resolve) =>
      spawn(join(bin, "pg_isready"), args, { stdio: "ignore" }).on("close", resolve),
    );
    if (code === 0) return;
    if (code === 3 || waited > 30_000)
      throw new Error(
        `the PostgreSQL server on port ${port} does not accept connections (pg_isready: ${code})\n${readTail(join(dir, "server.log"))}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP port free on 127.0.0.1 right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

function readTail(file: string): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-20).join("\n");
  } catch {
    return "";
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs a command; rejects with its stderr when it fails. */
function exec(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { ...options, timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(" ")}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

/**
 * Runs SQL through `psql` (until the project has a Node PostgreSQL client):
 * unaligned, tuples only, stops at the first error. `url` is either of a
 * server's URLs.
 */
export function psql(server: Pick<PostgresServer, "bin">, url: string, sql: string): Promise<string> {
  return exec(join(server.bin, "psql"), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]).then(
    (out) => out.trimEnd(),
  );
}
