/**
 * The descriptor class (escape finding: a jailed tool read a host FIFO, wrote
 * into a host pipe, served connections on a host TCP listener and talked to a
 * host-only service through descriptors the broker's parent left open).
 *
 * A broker is started the careless way — with a pipe (both ends), a FIFO, a
 * regular file (read and append), a listening and a connected TCP socket, and
 * a listening and a connected Unix socket, all inheritable, at numbers above a
 * gap (where Node's startup does not mark them close-on-exec). Then:
 *  - from the host: no process of the jail holds any of them (every descriptor
 *    of every process, compared by what it points to);
 *  - from inside: every descriptor number from 64 to the limit, through every
 *    API that takes a number (node:net Socket and Server, node:tty, node:fs
 *    read/write/fstat), is unusable, and nothing planted saw a byte or a connection.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO } from "../support/satellites.js";

const FIRST = 200;
interface Planted {
  readonly fd: number;
  readonly kind: string;
}

interface Report {
  readonly planted: Record<string, string | null>;
  readonly outcome: {
    ok: boolean;
    value?: { content: Array<{ type: string; json?: { used: Array<{ fd: number; api: string; detail: string }> } }> };
    error?: unknown;
  };
  readonly jail: Record<string, Record<string, string | null>>;
}

let dir: string;
const servers: Server[] = [];
const sockets: Socket[] = [];
const seen = { tcpConnections: 0, unixConnections: 0, serviceBytes: "" };
let report: Report;
let pipeOut: string;
const secret = `host-secret-${process.pid}`;
const marker = `fd-marker-${process.pid}`;

function listen(server: Server, where: { port: number; host: string } | { path: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(where, () => resolve());
  });
}

function fdOf(handle: { _handle?: { fd?: number } }): number {
  const fd = handle._handle?.fd;
  if (typeof fd !== "number" || fd < 0) throw new Error("no descriptor");
  return fd;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tether-fds-"));
  const fifo = join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const secretFile = join(dir, "secret.txt");
  writeFileSync(secretFile, `${secret} in a file\n`);
  const appendFile = join(dir, "append.txt");
  writeFileSync(appendFile, "");
  pipeOut = join(dir, "pipe-out.txt");
  writeFileSync(pipeOut, "");

  // A host-only service: it greets whoever connects (so a read has data) and records what it is sent.
  const service = createServer((s) => {
    s.on("data", (d) => (seen.serviceBytes += d.toString()));
    s.write(`${secret} from the host-only service\n`);
  });
  await listen(service, { port: 0, host: "127.0.0.1" });
  const unixService = createServer((s) => {
    s.on("data", (d) => (seen.serviceBytes += d.toString()));
    s.write(`${secret} from the host-only unix service\n`);
  });
  await listen(unixService, { path: join(dir, "service.sock") });
  // Listeners whose descriptors are planted: a connection accepted through them would count here.
  const tcpListener = createServer((s) => {
    seen.tcpConnections++;
    s.destroy();
  });
  await listen(tcpListener, { port: 0, host: "127.0.0.1" });
  const unixListener = createServer((s) => {
    seen.unixConnections++;
    s.destroy();
  });
  await listen(unixListener, { path: join(dir, "listener.sock") });
  servers.push(service, unixService, tcpListener, unixListener);
  const tcpClient = connect((service.address() as { port: number }).port, "127.0.0.1");
  const unixClient = connect(join(dir, "service.sock"));
  await Promise.all([tcpClient, unixClient].map((s) => new Promise((r) => s.once("connect", r))));
  sockets.push(tcpClient, unixClient);

  const fifoFd = openSync(fifo, "r+"); // read-write: opening does not block, and the secret waits in it
  writeFileSync(fifoFd, `${secret} in a FIFO\n`);
  const handed: Array<Planted & { from: number }> = [
    { fd: FIRST + 4, kind: "FIFO (read-write)", from: fifoFd },
    { fd: FIRST + 5, kind: "listening TCP socket", from: fdOf(tcpListener as never) },
    { fd: FIRST + 6, kind: "connected TCP socket to a host-only service", from: fdOf(tcpClient as never) },
    { fd: FIRST + 7, kind: "listening Unix socket", from: fdOf(unixListener as never) },
    { fd: FIRST + 8, kind: "connected Unix socket to a host-only service", from: fdOf(unixClient as never) },
  ];
  const stdio: Array<"pipe" | "ignore" | number> = ["ignore", "pipe", "pipe"];
  for (let fd = 3; fd <= FIRST + 8; fd++) stdio.push(handed.find((h) => h.fd === fd)?.from ?? "ignore");
  // bash adds a real pipe in each direction and a regular file each way, then becomes the broker.
  const script =
    `exec node --import tsx tests/jail/support/fd-broker.ts ${FIRST} ${FIRST + 8} ${marker}` +
    ` ${FIRST}< <(printf '%s in a pipe\\n' ${secret}) ${FIRST + 1}> >(cat > ${pipeOut})` +
    ` ${FIRST + 2}< ${secretFile} ${FIRST + 3}>> ${appendFile}`;
  const child = spawn("bash", ["-c", script], { cwd: REPO, stdio: stdio as never });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d.toString()));
  child.stderr!.on("data", (d) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.on("exit", r));
  rmSync(fifo);
  if (code !== 0) throw new Error(`the careless broker failed (${code}): ${err.slice(-2000)}`);
  report = JSON.parse(out.trim().split("\n").pop()!) as Report;
  expect(Object.values(report.planted).every((t) => t !== null)).toBe(true);
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(dir, { recursive: true, force: true });
});

describe("descriptors", () => {
  test("D01-host-view: no process of the jail holds any descriptor the broker inherited", () => {
    const planted = new Set(Object.values(report.planted));
    const held: string[] = [];
    for (const [proc, fds] of Object.entries(report.jail)) {
      for (const [fd, target] of Object.entries(fds))
        if (target !== null && planted.has(target)) held.push(`${proc} fd ${fd} → ${target}`);
    }
    expect(Object.keys(report.jail).length).toBeGreaterThanOrEqual(3); // bwrap, its init, Deno
    expect(held).toEqual([]);
  });

  test("D02-deno-stdio: Deno holds exactly stdin, stdout, stderr from outside; its other descriptors are its own", () => {
    const deno = Object.entries(report.jail).find(([proc]) => proc.endsWith(" deno"));
    expect(deno).toBeDefined();
    const fds = deno![1];
    expect(Object.keys(fds)).toEqual(expect.arrayContaining(["0", "1", "2"]));
    // Everything else Deno opened itself: anonymous inodes (epoll, eventfd), its own pipes and
    // its one connection to the broker, or files inside the jail. None is a host path outside it.
    for (const [fd, target] of Object.entries(fds)) {
      if (Number(fd) <= 2) continue;
      expect([fd, target]).toEqual([
        fd,
        expect.stringMatching(/^(anon_inode:|pipe:|socket:|\/tmp\/|\/opt\/tether\/|\/dev\/(null|urandom|random)$)/),
      ]);
    }
  });

  test("D03-probe-every-number: no descriptor from 64 to the limit is usable through any API that takes a number", () => {
    expect(report.outcome.ok).toBe(true);
    const used = report.outcome.value!.content[0]!.json!.used;
    expect(used).toEqual([]);
  });

  test("D04-nothing-reached: no planted pipe, FIFO, file, listener or service saw the jail", () => {
    expect(seen).toEqual({ tcpConnections: 0, unixConnections: 0, serviceBytes: "" });
    expect(readFileSync(pipeOut, "utf8")).toBe("");
    expect(readFileSync(join(dir, "append.txt"), "utf8")).toBe("");
    expect(JSON.stringify(report.outcome)).not.toContain(secret);
  });
});
