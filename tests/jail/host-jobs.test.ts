/**
 * Every host-side job — bundling, the type check, a database process (and
 * its migrations, the same jail) — is jailed as a satellite is. For each kind,
 * the job is built exactly as the broker builds it, then run with a probe in
 * place of its own script: what the probe can see and do is what the job's
 * code could after a bug in esbuild, Deno's checker or SQLite. Then the
 * database jail is attacked directly: statements the allowlist would refuse,
 * run past it, still reach no host file.
 */
import { createServer, type Server } from "node:net";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleJob } from "../../broker/install/bundle.js";
import { snapshotFolder, type FolderSnapshot } from "../../broker/install/folder-snapshot.js";
import { typeCheckJob } from "../../broker/install/type-check.js";
import { runHostJob, JOB_NODE, JOB_SCRIPT, type HostJob } from "../../broker/jail/host-job.js";
import { sharedLibraries } from "../../broker/jail/libraries.js";
import { denoCacheFoldJob } from "../../broker/jail/deno-cache.js";
import { databaseJob, DbProcesses, JAIL_HOME } from "../../broker/store/db-processes.js";
import { dbFile } from "../../broker/store/ext-db.js";
import { envJail, envOptions } from "../support/env-options.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const PROBE = join(HERE, "fixtures/job-probe.cjs");
const REPO = resolve(HERE, "../..");
const setup = () => ({
  jail: envJail(),
  ...(envOptions().sandbox !== undefined ? { sandbox: envOptions().sandbox } : {}),
});

let base: string;
let folder: string;
let home: string;
let secret: string;
let snapshot: FolderSnapshot;
let server: Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "tether-host-jobs-"));
  folder = realpathSync(mkdtempSync(join(base, "ext-")));
  writeFileSync(
    join(folder, "manifest.toml"),
    `name = "probe"\nversion = "0.1.0"\ndescription = "d"\nentry = "index.ts"\n`,
  );
  writeFileSync(join(folder, "index.ts"), "export const tools = {};\n");
  home = join(base, "home");
  mkdirSync(join(home, "data"), { recursive: true, mode: 0o700 });
  writeFileSync(join(home, "tether.db"), "the broker's store");
  secret = join(base, "host-secret.txt");
  writeFileSync(secret, "TETHER_HOST_JOB_SECRET");
  snapshot = snapshotFolder(folder, envJail().identity);
  server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  snapshot.remove();
  await new Promise((done) => server.close(done));
  rmSync(base, { recursive: true, force: true });
});

interface Probe {
  readonly Uid: string;
  readonly CapEff: string;
  readonly CapPrm: string;
  readonly NoNewPrivs: string;
  readonly Seccomp: string;
  readonly fds: Record<string, string>;
  readonly ns: Record<string, string>;
  readonly reads: Record<string, string>;
  readonly writes: Record<string, string>;
  readonly mounts: string[];
  readonly net: string;
}

/** Each kind of job, built as the broker builds it, and the writes its own jail must allow and refuse. */
const KINDS: Record<string, () => { job: HostJob; writable: string[]; readOnly: string[] }> = {
  bundle: () => ({ job: bundleJob(folder, snapshot, setup()), writable: [], readOnly: [join(folder, "index.ts")] }),
  "type check": () => {
    const config = join(base, "deno.json");
    writeFileSync(config, "{}");
    return {
      job: typeCheckJob(folder, snapshot, config, join(folder, "index.ts"), setup()),
      writable: [],
      readOnly: [join(folder, "index.ts")],
    };
  },
  "Deno cache fold (after a warm-up)": () => {
    const dir = mkdtempSync(join(base, "cache-"));
    writeFileSync(join(dir, "v8_code_cache_v2"), "");
    return {
      job: denoCacheFoldJob(dir, ["v8_code_cache_v2"], setup()),
      writable: ["/cache/v8_code_cache_v2"],
      readOnly: [join(home, "data", "x")],
    };
  },
  "database process (and migrations)": () => {
    const { job } = databaseJob(home, "probe", 1024 * 1024, setup(), []);
    return {
      job,
      writable: [dbFile(JAIL_HOME, "probe"), `${dbFile(JAIL_HOME, "probe")}-journal`],
      readOnly: [dbFile(JAIL_HOME, "other")],
    };
  },
};

describe.each(Object.keys(KINDS))("the %s jail", (kind) => {
  let probe: Probe;
  let job: HostJob;
  let writable: string[];
  let readOnly: string[];

  beforeAll(async () => {
    ({ job, writable, readOnly } = KINDS[kind]!());
    const read = [
      secret,
      join(home, "tether.db"),
      join(home, "data"),
      "/etc/passwd",
      "/root/.bashrc",
      join(REPO, "package.json"),
      join(REPO, "node_modules/esbuild/package.json"),
    ];
    const cfg = { port, read, write: [...writable, ...readOnly, "/escape.txt", "/opt/tether/escape.txt"] };
    const r = await runHostJob(
      { ...job, runtime: "node", script: PROBE, args: [JSON.stringify(cfg)] },
      "",
      60_000,
      1024 * 1024,
    );
    if (r.exitCode !== 0) throw new Error(`the probe failed: ${r.stderr}`);
    probe = JSON.parse(r.stdout.toString("utf8")) as Probe;
  });

  test("is never host root, holds no capability, has no_new_privs and the seccomp filter", () => {
    expect(probe.Uid.split(/\s+/)[0]).toBe(
      process.getuid?.() === 0 ? String(envJail().identity?.uid ?? 2_147_000_000) : String(process.getuid?.()),
    );
    expect(probe.CapEff).toBe("0000000000000000");
    expect(probe.CapPrm).toBe("0000000000000000");
    expect(probe.NoNewPrivs).toBe("1");
    expect(probe.Seccomp).toBe("2");
  });

  test("lives in namespaces of its own: mount, network, pid, IPC, user, UTS", () => {
    for (const [name, id] of Object.entries(probe.ns))
      expect([name, id]).not.toEqual([name, readlinkSync(`/proc/self/ns/${name}`)]);
  });

  test("reaches no network: the loopback listener never hears it", () => {
    expect(probe.net).not.toBe("connected");
    expect(connections).toBe(0);
  });

  test("holds no descriptor to a host file", () => {
    for (const [fd, target] of Object.entries(probe.fds)) {
      if (Number(fd) <= 2) continue;
      expect([fd, target, /^(pipe|socket|anon_inode):|^\/dev\/|^\/proc\/|^ENOENT$/.test(target)]).toEqual([
        fd,
        target,
        true,
      ]);
    }
  });

  test("reads no host file: not the broker's store, not a secret beside it, not /etc, not the checkout", () => {
    for (const [path, result] of Object.entries(probe.reads)) expect([path, result]).not.toEqual([path, "ok"]);
  });

  test("writes only where its job must: everything else is read-only or absent", () => {
    for (const path of writable) expect([path, probe.writes[path]]).toEqual([path, "ok"]);
    for (const path of [...readOnly, "/escape.txt", "/opt/tether/escape.txt"])
      expect([path, probe.writes[path]]).not.toEqual([path, "ok"]);
  });

  test("sees exactly its program, its libraries, its files and its binds mounted, and the jail's own /proc, /dev and /tmp", () => {
    const allowed = new Set([
      "/",
      "/tmp",
      JOB_NODE,
      JOB_SCRIPT,
      ...sharedLibraries(process.execPath),
      ...(job.files ?? []).map((f) => f.jail),
      ...(job.binds ?? []).map((b) => b.jail),
    ]);
    const unexpected = probe.mounts.filter((m) => !allowed.has(m) && !/^\/(proc|dev)(\/|$)/.test(m));
    expect(unexpected).toEqual([]);
  });
});

describe("the database jail holds where the allowlist would not (statements run past it)", () => {
  let dbs: DbProcesses;
  const hostDb = () => join(base, "host.sqlite");
  beforeAll(() => {
    dbs = new DbProcesses(home, setup());
  });
  afterAll(() => dbs.close());
  const raw = (sql: string, mode: "query" | "exec" = "exec") =>
    dbs.runUnchecked("victim", 1024 * 1024, mode, sql, Date.now() + 30_000);

  test("its own database works", async () => {
    expect(await raw("CREATE TABLE IF NOT EXISTS t (x)")).toMatchObject({ ok: true });
    expect(await raw("INSERT INTO t VALUES (1)")).toMatchObject({ ok: true });
    expect(await raw("SELECT x FROM t", "query")).toMatchObject({ ok: true, value: [{ x: 1 }] });
    expect(existsSync(dbFile(home, "victim"))).toBe(true);
  });

  test.each([
    ["ATTACH a host database", () => `ATTACH DATABASE '${hostDb()}' AS h`],
    ["ATTACH the broker's store", () => `ATTACH DATABASE '${join(home, "tether.db")}' AS h`],
    ["ATTACH another extension's database", () => `ATTACH DATABASE '${dbFile(home, "other")}' AS h`],
    ["VACUUM INTO a host path", () => `VACUUM INTO '${join(base, "copy.sqlite")}'`],
    ["ATTACH a new file beside its own", () => `ATTACH DATABASE '${dbFile(JAIL_HOME, "planted")}' AS h`],
  ])("%s: nothing on the host is opened or made", async (_what, sql) => {
    writeFileSync(hostDb(), "");
    const r = await raw(sql());
    if (r.ok) {
      // It "worked" on a file inside the jail (a path that exists only there): still nothing on the host.
      expect(await raw("SELECT name FROM h.sqlite_master", "query")).toMatchObject({ ok: true, value: [] });
      await raw("DETACH DATABASE h");
    }
    expect(existsSync(join(base, "copy.sqlite"))).toBe(false);
    expect(existsSync(dbFile(home, "planted"))).toBe(false);
  });

  test("load_extension of a host library is refused (no extension loading; nothing of the host's there)", async () => {
    const r = await raw("SELECT load_extension('/usr/lib/x86_64-linux-gnu/libsqlite3.so.0')", "query");
    expect(r.ok).toBe(false);
  });

  test("its process is not the broker's user, and sees not the broker's mounts or network", () => {
    const pid = dbs.pidOf("victim");
    expect(pid).toBeDefined();
    // The launcher execs bwrap (same pid); Node runs below it in the jail's namespaces.
    const parents = new Map<number, number>();
    for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
      try {
        // The parent pid is the 2nd field after the command's closing parenthesis.
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      } catch {
        // gone meanwhile
      }
    }
    const children = (p: number): number[] => [...parents].filter(([, parent]) => parent === p).map(([child]) => child);
    const tree: number[] = [];
    for (let frontier = [pid!]; frontier.length > 0; frontier = frontier.flatMap(children)) tree.push(...frontier);
    const node = tree.find((p) => {
      try {
        return readlinkSync(`/proc/${p}/exe`).endsWith("node") && p !== pid;
      } catch {
        return false;
      }
    });
    expect(node).toBeDefined();
    for (const ns of ["mnt", "net", "user", "pid"])
      expect(readlinkSync(`/proc/${node}/ns/${ns}`)).not.toBe(readlinkSync(`/proc/self/ns/${ns}`));
  });
});
